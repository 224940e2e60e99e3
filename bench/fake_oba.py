#!/usr/bin/env python3
"""A fake OneBusAway REST API server for bench/alarms.sh.

Every stop s_<n> has TRIPS_PER_STOP trips t_<n>_<k>; trip k departs
5 + (n * TRIPS_PER_STOP + k) % 180 minutes after the server started, with a
real-time prediction. With BEYOND_WINDOW=1 every departure is 250 minutes
later, past the widest stop window the checker asks for (240 minutes), so
each alarm needs a trip request. Each request waits LATENCY_MS before
answering, as a distant server would. Counts requests by kind at /stats
(zeroed by /reset).

One asyncio process: a request's wait costs no thread, so the stand-in's own
ceiling is far above what a thread per connection allowed (about 500
requests a second at 32 connections); bench/alarms.sh measures it first.
"""
import asyncio
import json
import os
import sys
import time
from urllib.parse import urlparse, parse_qs

PORT = int(sys.argv[1])
LATENCY = float(os.environ.get("LATENCY_MS", "20")) / 1000
TRIPS_PER_STOP = int(os.environ.get("TRIPS_PER_STOP", "50"))
OFFSET_MINUTES = 255 if os.environ.get("BEYOND_WINDOW") == "1" else 5
SERVICE_DATE = 1767168000000
START = int(time.time() * 1000)
counts = {"stop": 0, "trip": 0}


def departure(stop, k):
    return START + (OFFSET_MINUTES + (stop * TRIPS_PER_STOP + k) % 180) * 60_000


def entry(stop, k):
    when = departure(stop, k)
    return {"stopId": f"s_{stop}", "tripId": f"t_{stop}_{k}", "routeId": "1_1", "routeShortName": "44",
            "tripHeadsign": "Ballard", "serviceDate": SERVICE_DATE, "stopSequence": 4, "vehicleId": f"v_{k}",
            "predicted": True, "predictedDepartureTime": when, "scheduledDepartureTime": when,
            "predictedArrivalTime": when, "scheduledArrivalTime": when, "lastUpdateTime": when - 60_000}


def envelope(body):
    return {"code": 200, "currentTime": int(time.time() * 1000), "text": "OK", "version": 2,
            "data": {"entry": body, "references": {"routes": [{"id": "1_1", "shortName": "44"}]}}}


def answer(status, payload):
    body = json.dumps(payload).encode()
    reason = "OK" if status == 200 else "Not Found"
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def respond(target):
    url = urlparse(target)
    query = parse_qs(url.query)
    if url.path == "/stats":
        return answer(200, counts)
    if url.path == "/reset":  # after the bench has measured the stand-in's ceiling
        counts.update(stop=0, trip=0)
        return answer(200, counts)
    parts = url.path.split("/")
    method = parts[-2] if len(parts) >= 5 else ""
    # Counted as it arrives (a request still waiting when /reset comes is not counted after it).
    if method == "arrivals-and-departures-for-stop":
        counts["stop"] += 1
    elif method == "arrival-and-departure-for-stop":
        counts["trip"] += 1
    await asyncio.sleep(LATENCY)
    if len(parts) < 5 or not parts[-1].endswith(".json"):
        return answer(404, {"code": 404})
    stop_id = parts[-1][:-5]
    try:
        stop = int(stop_id.split("_")[1])
    except (IndexError, ValueError):
        return answer(404, {"code": 404})
    now = int(time.time() * 1000)
    if method == "arrivals-and-departures-for-stop":
        after = int(query.get("minutesAfter", ["35"])[0])
        items = [entry(stop, k) for k in range(TRIPS_PER_STOP)
                 if now - 300_000 <= departure(stop, k) <= now + after * 60_000]
        return answer(200, envelope({"stopId": stop_id, "arrivalsAndDepartures": items}))
    if method == "arrival-and-departure-for-stop":
        trip = query.get("tripId", [""])[0]
        try:
            k = int(trip.split("_")[2])
        except (IndexError, ValueError):
            return answer(404, {"code": 404})
        return answer(200, envelope(entry(stop, k)))
    return answer(404, {"code": 404})


async def connection(reader, writer):
    # HTTP/1.1 keep-alive: GET requests one after another, no bodies.
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            if len(request_line) < 2:
                break
            writer.write(await respond(request_line[1]))
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(connection, "127.0.0.1", PORT, backlog=512)
    async with server:
        await server.serve_forever()


asyncio.run(main())

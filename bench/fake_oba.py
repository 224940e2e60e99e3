#!/usr/bin/env python3
"""A fake OneBusAway REST API server for bench/alarms.sh.

Every stop s_<n> has TRIPS_PER_STOP trips t_<n>_<k>; trip k departs
5 + (n * TRIPS_PER_STOP + k) % 180 minutes after the server started, with a
real-time prediction. With BEYOND_WINDOW=1 every departure is 250 minutes
later, past the widest stop window the checker asks for (240 minutes), so
each alarm needs a trip request. Each request waits LATENCY_MS before
answering, as a distant server would. Counts requests by kind at /stats.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

PORT = int(sys.argv[1])
LATENCY = float(os.environ.get("LATENCY_MS", "20")) / 1000
TRIPS_PER_STOP = int(os.environ.get("TRIPS_PER_STOP", "50"))
OFFSET_MINUTES = 255 if os.environ.get("BEYOND_WINDOW") == "1" else 5
SERVICE_DATE = 1767168000000
START = int(time.time() * 1000)
counts = {"stop": 0, "trip": 0}
lock = threading.Lock()


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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path == "/stats":
            with lock:
                return self.answer(200, counts)
        time.sleep(LATENCY)
        parts = url.path.split("/")
        if len(parts) < 5 or not parts[-1].endswith(".json"):
            return self.answer(404, {"code": 404})
        method, stop_id = parts[-2], parts[-1][:-5]
        try:
            stop = int(stop_id.split("_")[1])
        except (IndexError, ValueError):
            return self.answer(404, {"code": 404})
        now = int(time.time() * 1000)
        if method == "arrivals-and-departures-for-stop":
            with lock:
                counts["stop"] += 1
            after = int(query.get("minutesAfter", ["35"])[0])
            items = [entry(stop, k) for k in range(TRIPS_PER_STOP)
                     if now - 300_000 <= departure(stop, k) <= now + after * 60_000]
            return self.answer(200, envelope({"stopId": stop_id, "arrivalsAndDepartures": items}))
        if method == "arrival-and-departure-for-stop":
            with lock:
                counts["trip"] += 1
            trip = query.get("tripId", [""])[0]
            try:
                k = int(trip.split("_")[2])
            except (IndexError, ValueError):
                return self.answer(404, {"code": 404})
            return self.answer(200, envelope(entry(stop, k)))
        return self.answer(404, {"code": 404})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


server = Server(("127.0.0.1", PORT), Handler)
server.serve_forever()

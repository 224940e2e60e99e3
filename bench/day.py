#!/usr/bin/env python3
"""Plays a region's busiest hour of rider traffic against one or more sidecars
(bench/day.sh starts them and the stand-ins). Open loop: each kind of request
arrives at its own Poisson rate, whatever the server's answers take, so a slow
server meets the load it would meet and its latency is not hidden (a closed
loop would wait and send less).

The busiest hour of a region of DEVICES installed apps (the assumptions,
stated once, per device in that hour):
  - 25% open the app: GET the alerts feed (conditional on the last ETag the
    device saw, as the apps do) and GET the region's surveys;
  - 5% register (a new install or a rotated push token);
  - 2% set a departure alarm (it fires about a minute later);
  - 0.5% answer a survey;
and, played by the server itself: 1% of devices follow a bus in a Live
Activity updated every minute, and at ALERT_AT seconds one alert is pushed
to every device.

Writes a JSON report: per kind of request the count, errors, p50, p99 and
max in ms; each alarm with the time it was due (departure minus its lead).
"""
import asyncio
import collections
import json
import os
import random
import sys
import time

# Idle keep-alive connections one pool keeps (the oldest are closed, as phones
# drop theirs): without a bound, connections the server closed near its limit
# pile up on this side until two targets' pools exceed the file limit.
IDLE_CONNECTIONS_PER_TARGET = 4000

RATES_PER_DEVICE_HOUR = {"open": 0.25, "register": 0.05, "alarm": 0.02, "survey": 0.005}


class Connection:
    """One keep-alive HTTP/1.1 connection; answers are read to their end."""

    def __init__(self, host, port, source):
        self.host, self.port, self.source = host, port, source
        self.reader = self.writer = None

    async def request(self, method, path, headers=None, body=b""):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, local_addr=(self.source, 0))
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("closed")
        status = int(status_line.split()[1])
        answer_headers = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            answer_headers[name.strip().lower()] = value.strip()
        if status in (204, 304) or method == "HEAD":
            data = b""  # no body, whatever Content-Length says
        elif answer_headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                data += chunk[:-2]
                if size == 0:
                    break
        else:
            data = await self.reader.readexactly(int(answer_headers.get("content-length", "0")))
        if answer_headers.get("connection", "").lower() == "close":
            self.close()
        return status, answer_headers, data

    def close(self):
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class Pool:
    """Connections to one sidecar from many loopback addresses, so the
    per-address limits see a crowd, as from riders' phones."""

    def __init__(self, host, port, index):
        self.host, self.port, self.idle, self.index = host, port, {}, index
        self.idle_order = collections.deque()  # (source, connection), oldest first
        self.random = random.Random(index)

    async def request(self, *args, **kwargs):
        # Each request from one of 16,000 addresses, on that address's idle
        # connection when it has one: riders' phones, not one busy client.
        source = f"127.{10 + self.index}.{self.random.randrange(64)}.{self.random.randrange(1, 255)}"
        idle = self.idle.get(source, [])
        connection = idle.pop() if idle else None
        if connection is not None:
            try:
                answer = await connection.request(*args, **kwargs)
            except (ConnectionError, OSError, asyncio.IncompleteReadError):
                # The server closed the idle connection (its keep-alive timeout)
                # before it read this request: send it again on a new one, as
                # every HTTP client does.
                connection.close()
                connection = None
        if connection is None:
            connection = Connection(self.host, self.port, source)
            try:
                answer = await connection.request(*args, **kwargs)
            except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError):
                connection.close()
                raise
        if connection.writer is not None:
            self.idle.setdefault(source, []).append(connection)
            self.idle_order.append((source, connection))
            while len(self.idle_order) > IDLE_CONNECTIONS_PER_TARGET:
                old_source, old = self.idle_order.popleft()
                if old in self.idle.get(old_source, []):
                    self.idle[old_source].remove(old)
                    old.close()
        return answer


class Day:
    def __init__(self, settings):
        self.s = settings
        self.pools = [Pool(host, int(port), i) for i, (host, port) in
                      enumerate(t.split(":") for t in settings["targets"].split(","))]
        self.random = random.Random(settings.get("seed", 1))
        self.samples = {kind: [] for kind in ["alerts feed", "surveys", "register", "alarm", "survey answer"]}
        self.errors = {kind: 0 for kind in self.samples}
        self.statuses = {}
        self.alarms = []
        self.etag = None
        self.send = {}
        self.tasks = set()
        self.start = time.time()

    def pool(self):
        return self.pools[self.random.randrange(len(self.pools))]

    async def timed(self, kind, method, path, headers=None, body=b"", ok=(200,)):
        began = time.perf_counter()
        try:
            status, headers_, data = await self.pool().request(method, path, headers, body)
        except Exception as error:  # every failure is counted, none stops the run
            self.errors[kind] += 1
            name = f"{kind} {type(error).__name__}" + (f" errno {error.errno}" if getattr(error, "errno", None) else "")
            self.statuses[name] = self.statuses.get(name, 0) + 1
            return None
        self.samples[kind].append((time.perf_counter() - began) * 1000)
        if status not in ok:
            self.errors[kind] += 1
            self.statuses[f"{kind} {status}"] = self.statuses.get(f"{kind} {status}", 0) + 1
        return status, headers_, data

    # The kinds of rider traffic.
    async def open_app(self, n):
        headers = {"If-None-Match": self.etag} if self.etag and self.random.random() < 0.8 else {}
        answer = await self.timed("alerts feed", "GET", "/api/v1/regions/1/alerts", headers, ok=(200, 304))
        if answer and answer[0] == 200 and "etag" in answer[1]:
            self.etag = answer[1]["etag"]
        await self.timed("surveys", "GET", f"/api/v1/regions/1/surveys?user_id=rider-{n}")

    async def register(self, n):
        body = f"token={n:032x}{os.getpid():08x}{self.random.getrandbits(96):024x}&operating_system=ios&locale=en-US".encode()
        await self.timed("register", "POST", "/api/v2/regions/1/push_registrations",
                         {"Content-Type": "application/x-www-form-urlencoded"}, body, ok=(204,))

    async def alarm(self, n):
        # A trip that departs 11-13 minutes from now, with a 10-minute lead:
        # the alarm is due in one to three minutes. Departures sit at seconds
        # spread over the minute (as bench/day.sh writes them), so alarms are
        # due at every phase of the checker's interval.
        now_ms = int(time.time() * 1000)
        t0, stops = self.s["trips_start_ms"], self.s["stops"]
        k = (now_ms + 11 * 60_000 - t0) // 60_000 + 1
        stop = self.random.randrange(stops)
        departure = t0 + k * 60_000 + ((stop * 7919 + k * 104729) % 60) * 1000
        token = f"a1a{n:061x}"
        body = (f"user_push_id={token}&stop_id=s_{stop}&trip_id=t_{stop}_{k}&service_date={self.s['service_date']}"
                f"&seconds_before=600&operating_system=ios&vehicle_id=v_{k}&stop_sequence=4").encode()
        answer = await self.timed("alarm", "POST", "/api/v2/regions/1/alarms",
                                  {"Content-Type": "application/x-www-form-urlencoded"}, body, ok=(201,))
        if answer and answer[0] == 201:
            self.alarms.append({"token": token, "due_ms": departure - 600_000, "created_ms": now_ms})

    async def survey(self, n):
        body = json.dumps({"survey_id": self.s["survey_id"], "user_identifier": f"rider-{n}",
                           "responses": json.dumps([{"question_id": self.s["question_id"], "question_type": "radio",
                                                     "answer": "Yes"}])}).encode()
        await self.timed("survey answer", "POST", "/api/v1/survey_responses",
                         {"Content-Type": "application/json"}, body, ok=(201,))

    async def alert_to_everyone(self):
        """One alert created, published and pushed to every device through the
        admin API, as an editor's console does; the send is followed to its end."""
        key = {"Authorization": f"Bearer {self.s['admin_key']}", "Content-Type": "application/json"}
        pool = self.pools[0]
        status, _, data = await pool.request("POST", "/admin/api/regions/1/alerts", key, json.dumps({
            "header": "Route 44 detoured", "description": "Buses skip NW 45th St.", "agency_id": "1",
            "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))}).encode())
        if status != 201:
            raise SystemExit(f"creating the alert: {status} {data[:300]!r}")
        alert = json.loads(data)["id"]
        await pool.request("POST", f"/admin/api/alerts/{alert}/publish", key)
        began = time.time()
        status, _, data = await pool.request("POST", f"/admin/api/alerts/{alert}/sends", key,
                                             json.dumps({"audience": "all"}).encode())
        self.send = {"started_s": began - self.start, "status": status}
        while True:
            await asyncio.sleep(1)
            _, _, data = await pool.request("GET", f"/admin/api/alerts/{alert}/sends", key)
            answer = json.loads(data)
            sends = answer if isinstance(answer, list) else next(
                (v for v in answer.values() if isinstance(v, list)), [])
            latest = sends[0] if sends else {}
            if latest.get("status") in ("done", "failed"):
                self.send.update({"duration_s": round(time.time() - began, 1), "result": latest})
                return

    async def arrivals(self, kind, action):
        """Poisson arrivals of one kind at the busiest hour's rate."""
        rate = RATES_PER_DEVICE_HOUR[kind] * self.s["devices"] / 3600
        n, end = 0, self.start + self.s["alarm_window" if kind == "alarm" else "window"]
        while True:
            await asyncio.sleep(self.random.expovariate(rate))
            if time.time() >= end:
                return
            n += 1
            task = asyncio.ensure_future(action(n * 1000 + ord(kind[0])))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def run(self):
        async def alert_later():
            await asyncio.sleep(self.s["alert_at"])
            await self.alert_to_everyone()
        runs = [self.arrivals("open", self.open_app), self.arrivals("register", self.register),
                self.arrivals("alarm", self.alarm), self.arrivals("survey", self.survey), alert_later()]
        await asyncio.gather(*runs)
        while self.tasks:
            await asyncio.sleep(0.1)

    def report(self):
        def quantile(values, q):
            ordered = sorted(values)
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else None
        kinds = {kind: {"count": len(v), "errors": self.errors[kind], "p50_ms": quantile(v, 0.5),
                        "p99_ms": quantile(v, 0.99), "max_ms": quantile(v, 1.0)} for kind, v in self.samples.items()}
        return {"kinds": kinds, "statuses": self.statuses, "alarms": self.alarms, "send": self.send}


def main():
    settings = json.loads(sys.argv[1])
    day = Day(settings)
    asyncio.run(day.run())
    with open(settings["out"], "w") as file:
        json.dump(day.report(), file)


if __name__ == "__main__":
    main()

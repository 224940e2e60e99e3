#!/usr/bin/env python3
"""The issue 24 attacks that take minutes or watch memory, against a binary.

    attacks.py BIN signins|ghostbus|slowclients [WORK]

  signins      150 anonymous sign-ins (unknown accounts) at once from 150 addresses, while
               127.0.0.1 asks /healthz every 100 ms: RSS growth, the slowest
               /healthz, and how the attempts were answered.
  ghostbus     186,499 refused ghost-bus reports (8 KB user_identifier, no
               trip), each from its own address; then 12,000 more from 1,500
               addresses: RSS after each.
  slowclients  20 addresses x 60 half-sent requests that come back whenever
               they are cut, while 127.0.0.1 makes 200 requests: its success rate.

Prints one line of JSON with the figures. Loopback only: 127.0.0.0/8 is ours.
"""
import concurrent.futures
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.path.abspath(sys.argv[1])
WHAT = sys.argv[2]
WORK = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="sidecar-attacks-")
PASSWORD = "a long enough password"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, *arguments):
        self.port = free_port()
        self.database = os.path.join(WORK, f"attack-{self.port}.sqlite3")
        self.log = open(os.path.join(WORK, f"attack-{self.port}.log"), "w")
        self.arguments = arguments

    def start(self):
        self.process = subprocess.Popen([BIN, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--database", self.database,
                                         "--log-level", "warning", *self.arguments], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                if request("127.0.0.1", self.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise SystemExit(f"{BIN} did not start: {open(self.log.name).read()}")

    def memory(self, field):
        for line in open(f"/proc/{self.process.pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def request(source, port, raw, timeout=30, body=b""):
    """One request on its own connection from `source`; (status, headers text, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as connection:
        connection.sendall(raw.encode() + body)
        data = b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    match = re.match(rb"HTTP/1\.\d (\d{3})", head)
    return (int(match.group(1)) if match else 0), head.decode(errors="replace"), rest


def address(number, base=1):
    """The number-th distinct loopback address from 127.base.1.1 on."""
    return f"127.{base + number // 64516}.{number // 254 % 254 + 1}.{number % 254 + 1}"


def signins():
    server = Server()
    subprocess.run([BIN, "user", "create", "--email", "staff@example.org", "--role", "admin", "--database", server.database],
                   input=PASSWORD + "\n", text=True, capture_output=True, check=True)
    server.start()
    port = server.port
    before = server.memory("VmRSS")
    stop = threading.Event()
    slowest = [0.0]

    def probe():
        while not stop.is_set():
            started = time.time()
            try:
                request("127.0.0.1", port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout=60)
            except OSError:
                pass
            slowest[0] = max(slowest[0], time.time() - started)
            time.sleep(0.1)

    def attempt(number):
        source = f"127.0.5.{number + 1}"
        status, head, body = request(source, port, "GET /admin/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        cookie = re.search(r"Set-Cookie: (sidecar_login=[^;]+)", head, re.I).group(1)
        token = re.search(rb'name="login_token" value="([^"]+)"', body).group(1).decode()
        # Anonymous: an account per attempt that does not exist, so no
        # per-account limit applies and each attempt would be hashed.
        form = f"login_token={token}&email=nobody{number}%40example.org&password=wrong{number}&next=%2Fadmin".encode()
        return request(source, port, f"POST /admin/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {cookie}\r\n"
                       f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(form)}\r\n\r\n", body=form, timeout=120)[0]

    prober = threading.Thread(target=probe)
    prober.start()
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(150) as pool:
        statuses = list(pool.map(attempt, range(150)))
    elapsed = time.time() - started
    time.sleep(0.5)
    stop.set()
    prober.join()
    peak = server.memory("VmHWM")
    server.stop()
    counts = {str(code): statuses.count(code) for code in sorted(set(statuses))}
    return {"attack": "signins", "attempts": 150, "answers": counts, "seconds": round(elapsed, 1), "rss_before_mib": round(before, 1),
            "rss_peak_mib": round(peak, 1), "growth_mib": round(peak - before, 1), "slowest_healthz_s": round(slowest[0], 2)}


def ghostbus():
    server = Server().start()
    port = server.port
    counter = iter(range(10**9))

    def report():
        # A distinct 8 KB identifier each time, and no trip: refused with 422.
        body = f"user_identifier={next(counter):08d}{'u' * 7992}&wait_duration_minutes=5".encode()
        return (f"POST /api/v2/regions/1/ghost_bus_reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"), body
    before = server.memory("VmRSS")
    statuses = {}
    lock = threading.Lock()

    def send(source):
        raw, body = report()
        try:
            status = request(source, port, raw, body=body)[0]
        except OSError:
            status = 0
        with lock:
            statuses[status] = statuses.get(status, 0) + 1

    def flood(sources):
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            list(pool.map(send, sources))

    started = time.time()
    flood(address(n) for n in range(186_499))
    flooded = time.time() - started
    after_flood = server.memory("VmRSS")
    flood_statuses = dict(statuses)
    statuses.clear()
    flood(address(n % 1500, base=40) for n in range(12_000))
    after_small = server.memory("VmRSS")
    peak = server.memory("VmHWM")
    server.stop()
    return {"attack": "ghostbus", "flood_requests": 186_499, "flood_answers": {str(k): v for k, v in flood_statuses.items()},
            "flood_seconds": round(flooded, 1), "rss_before_mib": round(before, 1), "rss_after_flood_mib": round(after_flood, 1),
            "second_requests": 12_000, "second_answers": {str(k): v for k, v in statuses.items()},
            "rss_after_second_mib": round(after_small, 1), "second_growth_mib": round(after_small - after_flood, 1), "rss_peak_mib": round(peak, 1)}


def slowclients():
    server = Server().start()
    port = server.port
    stop = threading.Event()
    held = [0]

    def attacker(source):
        sockets = []
        while not stop.is_set():
            alive = []
            for connection in sockets:
                try:
                    connection.setblocking(False)
                    gone = connection.recv(1) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    connection.close()
                else:
                    alive.append(connection)
            sockets = alive
            while len(sockets) < 60 and not stop.is_set():
                try:
                    connection = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
                    connection.sendall(b"POST /api/v2/regions/1/push_registrations HTTP/1.1\r\nHost: x\r\nContent-")
                    sockets.append(connection)
                except OSError:
                    time.sleep(0.05)
                    break
            held[0] = max(held[0], len(sockets))
            time.sleep(0.2)
        for connection in sockets:
            connection.close()

    attackers = [threading.Thread(target=attacker, args=(f"127.0.6.{n + 1}",)) for n in range(20)]
    for thread in attackers:
        thread.start()
    time.sleep(3)
    answered = 0
    failures = {}
    for _ in range(200):
        try:
            status = request("127.0.0.1", port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout=5)[0]
            if status == 200:
                answered += 1
            else:
                failures[str(status)] = failures.get(str(status), 0) + 1
        except OSError as error:
            failures[type(error).__name__] = failures.get(type(error).__name__, 0) + 1
        time.sleep(0.1)
    stop.set()
    for thread in attackers:
        thread.join()
    server.stop()
    return {"attack": "slowclients", "attackers": "20 addresses x 60 half-sent requests, reconnecting", "bystander_requests": 200,
            "bystander_answered_200": answered, "failures": failures, "success_rate": round(answered / 200, 3)}


print(json.dumps({"signins": signins, "ghostbus": ghostbus, "slowclients": slowclients}[WHAT]()))

#!/usr/bin/env python3
"""Stops, crashes, storage faults and slow clients against the real binary.

    stops_and_faults.py BIN [check ...]

Each check starts `sidecar serve` on loopback with its own database and
local stand-ins (a OneBusAway server and a gorush gateway written here), does
what an operator or an attacker would, and verifies the outcome:

  keepalive   20 SIGTERMs under 50 keep-alive clients: exit 0 every time, every
              acknowledged registration stored, integrity_check ok
  alarms      SIGTERM and kill -9 while alarms fire: none lost; after SIGTERM
              none pushed twice; after kill -9 at most the page in flight
  sends       the same for an alert send started through the admin API; the
              restarted server resumes it by itself
  health      /healthz and writes with the database file deleted, corrupted,
              on a full disk, and no longer writable
  slowloris   1030 slow sockets from 127.0.0.2 while 127.0.0.1 is served
"""
import atexit
import http.client
import json
import os
import pwd
import random
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIN = os.path.abspath(sys.argv[1])
CHECKS = sys.argv[2:] or ["keepalive", "alarms", "sends", "health", "slowloris", "parameters"]
WORK = tempfile.mkdtemp(prefix="sidecar-faults-")
os.chmod(WORK, 0o755)  # another user (nobody) runs one of the servers
# Every script importing this one gets this folder too: removed at exit, after
# the servers are stopped (atexit runs the later registration first).
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
SERVICE_DATE = 1767168000000


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


# Every server a check starts, so a failing check (sys.exit, an exception)
# never leaves one running to disturb the next run's ports and databases.
STARTED = []


@atexit.register
def stop_leftovers():
    for process in STARTED:
        if process.poll() is None:
            process.kill()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                pass


def check(condition, message):
    if not condition:
        fail(message)


# MARK: Stand-ins

class StandIn(ThreadingHTTPServer):
    """A stand-in server on a free loopback port, served from a thread until the check exits."""
    daemon_threads = True

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)

    def start(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def origin(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class QuietHandler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1, and no request log in the check's output."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


class Gorush(StandIn):
    """Records every token pushed; answers after `delay` seconds."""

    def __init__(self):
        super().__init__(GorushHandler)
        self.delay = 0.0
        self.pushes = {}
        self.requests = 0
        self.lock = threading.Lock()
        self.start()

    @property
    def url(self):
        return self.origin

    def handle_error(self, request, client_address):
        pass  # a killed sidecar hangs up mid-answer: expected here

    def reset(self):
        with self.lock:
            self.pushes, self.requests = {}, 0


class GorushHandler(QuietHandler):

    def do_GET(self):
        # gorush's health endpoint, which `sidecar doctor` asks.
        answer = b'{"status":"ok"}' if self.path == "/healthz" else b'{"error":"not found"}'
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests += 1
        time.sleep(self.server.delay)
        with self.server.lock:
            for notification in body.get("notifications", []):
                for token in notification.get("tokens", []):
                    self.server.pushes[token] = self.server.pushes.get(token, 0) + 1
        answer = json.dumps({"counts": len(body.get("notifications", [])), "logs": [], "success": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class OBA(StandIn):
    """Stop s<n> has one trip t<n>, departing five minutes from now. A route,
    stop or trip asked for by id (a scoped alert's check) is known unless its
    id contains "missing"."""

    def __init__(self):
        super().__init__(OBAHandler)
        self.start()

    @property
    def url(self):
        return self.origin + "/"


class OBAHandler(QuietHandler):

    def do_GET(self):
        path = self.path.split("?")[0]
        stop = path.rsplit("/", 1)[-1].removesuffix(".json")
        now = int(time.time() * 1000)
        if path.split("/")[-2:-1] in (["route"], ["stop"], ["trip"]):
            known = "missing" not in stop
            answer = json.dumps({"code": 200 if known else 404, "currentTime": now, "text": "OK" if known else "resource not found",
                                 "version": 2, "data": {"entry": {"id": stop}, "references": {}} if known else None}).encode()
            self.send_response(200 if known else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        when = now + 300_000
        entry = {"stopId": stop, "tripId": "t" + stop[1:], "routeId": "1_1", "routeShortName": "44", "tripHeadsign": "Ballard",
                 "serviceDate": SERVICE_DATE, "stopSequence": 4, "vehicleId": "v1", "predicted": True,
                 "predictedDepartureTime": when, "scheduledDepartureTime": when, "predictedArrivalTime": when,
                 "scheduledArrivalTime": when, "lastUpdateTime": now}
        data = {"entry": entry} if "/arrival-and-departure-for-stop/" in path else \
            {"entry": {"stopId": stop, "arrivalsAndDepartures": [entry]}}
        data["references"] = {"routes": [{"id": "1_1", "shortName": "44"}]}
        answer = json.dumps({"code": 200, "currentTime": now, "text": "OK", "version": 2, "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


# MARK: The binary

class Sidecar:
    def __init__(self, database, *arguments, user=None):
        self.log_path = os.path.join(WORK, f"sidecar-{random.randrange(1 << 30)}.log")
        self.log = open(self.log_path, "w")
        preexec = None
        binary = BIN
        if user:
            record = pwd.getpwnam(user)
            preexec = lambda: (os.setgid(record.pw_gid), os.setuid(record.pw_uid))
            # The checkout may sit where other users cannot enter (root's home,
            # a mktemp -d folder): the other user runs a copy in WORK.
            binary = os.path.join(WORK, "sidecar-for-other-users")
            if not os.path.exists(binary):
                shutil.copy(BIN, binary)
                os.chmod(binary, 0o755)
        self.process = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", "0", "--database", database,
                                         "--log-level", "info", *arguments],
                                        stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=preexec)
        STARTED.append(self.process)
        self.port = None
        deadline = time.monotonic() + 120  # only catches a hang: the loop ends at the event
        while time.monotonic() < deadline:
            text = open(self.log_path).read()
            # Text (`port=8080`) or JSON (`"port":"8080"`) log lines.
            found = re.search(r'sidecar listening.*?\bport(?:=|":")(\d+)', text)
            if found:
                self.port = int(found.group(1))
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        fail(f"sidecar did not start:\n{open(self.log_path).read()}")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, method, path, body=None, headers=None, timeout=60):
        data = body.encode() if isinstance(body, str) else body
        request = urllib.request.Request(self.url(path), data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def stop(self, sig=signal.SIGTERM, timeout=30):
        self.process.send_signal(sig)
        code = self.process.wait(timeout)
        self.log.close()
        return code

    def text(self):
        return open(self.log_path).read()


def cli(database, *arguments):
    done = subprocess.run([BIN, *arguments, "--database", database], capture_output=True, text=True)
    check(done.returncode == 0, f"sidecar {' '.join(arguments)}: {done.stderr}")
    return done.stdout


def regions_file(oba):
    path = os.path.join(WORK, "regions.json")
    with open(path, "w") as file:
        json.dump({"data": {"list": [{"id": 1, "regionName": "Test", "obaBaseUrl": oba.url, "sidecarBaseUrl": None}]}}, file)
    return path


def wait_for(condition, seconds, message):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    fail(message)


def integrity(database):
    connection = sqlite3.connect(database)
    verdict = connection.execute("PRAGMA integrity_check").fetchone()[0]
    connection.close()
    return verdict


# MARK: Checks

def keepalive():
    database = os.path.join(WORK, "keepalive.sqlite3")
    acknowledged = set()
    for round_number in range(20):
        sidecar = Sidecar(database, "--push-registration-limit", "0")
        lock = threading.Lock()

        def client(number):
            connection = http.client.HTTPConnection("127.0.0.1", sidecar.port, timeout=60)
            sent = 0
            while True:
                token = f"round-{round_number}-c{number}-{sent}"
                try:
                    connection.request("POST", "/api/v2/regions/1/push_registrations",
                                       body=f"token={token}&operating_system=ios",
                                       headers={"Content-Type": "application/x-www-form-urlencoded"})
                    response = connection.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException):
                    return  # the server stopped listening: done
                if response.status == 204:
                    with lock:
                        acknowledged.add(token)
                sent += 1

        threads = [threading.Thread(target=client, args=(number,)) for number in range(50)]
        for thread in threads:
            thread.start()
        time.sleep(0.3 + random.random() * 0.5)
        code = sidecar.stop()
        for thread in threads:
            thread.join(20)
        check(code == 0, f"round {round_number}: exit status {code}\n{sidecar.text()[-2000:]}")
        check("MHD_stop_daemon" not in sidecar.text(), "libmicrohttpd aborted")
        # What an operator copies after `systemctl stop`: the main file alone.
        alone = os.path.join(WORK, "keepalive-main-file-only.sqlite3")
        shutil.copyfile(database, alone)
        stored = {row[0] for row in sqlite3.connect(alone).execute("SELECT token FROM push_registrations")}
        os.remove(alone)
        missing = acknowledged - stored
        check(not missing, f"round {round_number}: {len(missing)} acknowledged registrations are not in the main file alone")
    check(integrity(database) == "ok", "integrity_check failed")
    print(f"keepalive: 20 SIGTERMs under 50 keep-alive clients, exit 0 each time; {len(acknowledged)} acknowledged "
          f"registrations all in the main file alone after each stop (the log folded in); integrity_check ok")


def alarms(gorush, oba, sig):
    database = os.path.join(WORK, f"alarms-{sig}.sqlite3")
    regions = regions_file(oba)
    # Created while nothing fires them (the checker's next cycle is an hour away).
    creating = Sidecar(database, "--regions", regions, "--push-transport", "none", "--alarm-check-interval", "3600",
                       "--alarm-limit", "0", "--upstream-lookup-limit", "0", "--push-registration-limit", "0")
    for number in range(600):
        status, _ = creating.request("POST", "/api/v2/regions/1/alarms", body=json.dumps({
            "user_push_id": f"alarm-user-{number}", "operating_system": "ios", "stop_id": f"s{number}", "trip_id": f"t{number}",
            "service_date": SERVICE_DATE, "stop_sequence": 4, "seconds_before": 600}), headers={"Content-Type": "application/json"})
        check(status == 201, f"alarm creation answered {status}")
    check(creating.stop() == 0, "the creating server did not stop cleanly")
    gorush.reset()
    gorush.delay = 1.0
    firing = Sidecar(database, "--regions", regions, "--gorush-url", gorush.url, "--alarm-check-interval", "3600")
    wait_for(lambda: gorush.requests > 0, 20, "no alarm push arrived")
    code = firing.stop(sig)
    if sig == signal.SIGTERM:
        check(code == 0, f"SIGTERM while firing: exit status {code}\n{firing.text()[-2000:]}")
    gorush.delay = 0.0
    # After kill -9 the page the killed process claimed is taken over once
    # its claim lapses (30 s), by a later cycle.
    finishing = Sidecar(database, "--regions", regions, "--gorush-url", gorush.url, "--alarm-check-interval", "5")
    wait_for(lambda: sqlite3.connect(database).execute("SELECT COUNT(*) FROM alarms").fetchone()[0] == 0, 90,
             "alarms were left unfired after the restart")
    check(finishing.stop() == 0, "the restarted server did not stop cleanly")
    pushes = dict(gorush.pushes)
    lost = [f"alarm-user-{n}" for n in range(600) if f"alarm-user-{n}" not in pushes]
    twice = sum(1 for count in pushes.values() if count > 1)
    check(not lost, f"{len(lost)} alarms were never pushed")
    if sig == signal.SIGTERM:
        check(twice == 0, f"{twice} alarms were pushed twice after SIGTERM")
    else:
        check(twice <= 500, f"{twice} alarms pushed twice after kill -9 (more than the page of 500 in flight)")
    check(integrity(database) == "ok", "integrity_check failed")
    name = "SIGTERM" if sig == signal.SIGTERM else "kill -9"
    print(f"alarms: {name} while 600 alarms fired; all 600 pushed after the restart, {twice} twice; integrity_check ok")


def sends(gorush, sig):
    database = os.path.join(WORK, f"send-{sig}.sqlite3")
    cli(database, "migrate")
    cli(database, "region", "set", "--id", "1", "--agency-id", "1")
    alert = cli(database, "alert", "create", "--region", "1", "--header", "Route 44 detoured", "--start",
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))).split()[2]
    cli(database, "alert", "publish", alert)
    key = cli(database, "apikey", "create", "--name", "test", "--region", "all", "--push").strip().splitlines()[-1]
    connection = sqlite3.connect(database)
    now = int(time.time() * 1000)
    connection.executemany("""INSERT INTO push_registrations (region_id, token, operating_system, apns_sandbox, test_device,
                              created_at, last_seen_at) VALUES (1, ?, 'ios', 0, 0, ?, ?)""",
                           [(f"device-{n}", now, now) for n in range(5000)])
    connection.commit()
    connection.close()
    gorush.reset()
    gorush.delay = 0.3
    running = Sidecar(database, "--gorush-url", gorush.url, "--send-lease-seconds", "5")
    status, _ = running.request("POST", f"/admin/api/alerts/{alert}/sends", body="audience=all",
                                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-www-form-urlencoded"})
    check(status == 202, f"starting the send answered {status}")
    wait_for(lambda: gorush.requests > 0, 20, "no alert push arrived")
    code = running.stop(sig)
    if sig == signal.SIGTERM:
        check(code == 0, f"SIGTERM during a send: exit status {code}\n{running.text()[-2000:]}")
        lease = sqlite3.connect(database).execute("SELECT lease_until FROM alert_sends").fetchone()[0]
        check(lease is None, "the stopped server kept the send's lease")
    gorush.delay = 0.0
    resuming = Sidecar(database, "--gorush-url", gorush.url, "--send-lease-seconds", "5")
    wait_for(lambda: sqlite3.connect(database).execute("SELECT status FROM alert_sends").fetchone()[0] == "done", 60,
             "the send was not resumed and finished by the restarted server")
    check(resuming.stop() == 0, "the resuming server did not stop cleanly")
    pushes = dict(gorush.pushes)
    lost = 5000 - len(pushes)
    twice = sum(1 for count in pushes.values() if count > 1)
    check(lost == 0, f"{lost} registrations never got the alert")
    if sig == signal.SIGTERM:
        check(twice == 0, f"{twice} registrations got the alert twice after SIGTERM")
    else:
        check(twice <= 1000, f"{twice} pushed twice after kill -9 (more than the page in flight)")
    name = "SIGTERM" if sig == signal.SIGTERM else "kill -9"
    print(f"sends: {name} during a send to 5000; the restarted server resumed it by itself; all delivered, {twice} twice")


def health():
    def health_of(sidecar):
        """The public /healthz (names the failing checks only) with the
        details the log holds, which are not for the internet."""
        time.sleep(1.1)  # past the one-second verdict cache
        status, body = sidecar.request("GET", "/healthz")
        body = json.loads(body)
        unhealthy = [line for line in sidecar.text().splitlines() if "storage is unhealthy" in line]
        body["details"] = unhealthy[-1] if unhealthy else ""
        return status, body

    def registration_status(sidecar, token):
        return sidecar.request("POST", "/api/v2/regions/1/push_registrations", body=f"token={token}&operating_system=ios",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})[0]

    directory = tempfile.mkdtemp(dir=WORK)
    database = os.path.join(directory, "deleted.sqlite3")
    sidecar = Sidecar(database)
    check(health_of(sidecar)[0] == 200, "healthz was not 200 at start")
    os.remove(database)
    status, body = health_of(sidecar)
    check(status == 503 and "deleted" in body["details"] and "deleted" not in body["reason"], f"deleted file: {status} {body}")
    check(registration_status(sidecar, "lost-device-1") == 503, "a write to a deleted database was acknowledged")
    check("was deleted while the server was running" in sidecar.text(), "the log does not say why writes fail")
    sidecar.stop()
    print("health: deleted database file: /healthz 503, writes 503, the log says why")

    database = os.path.join(directory, "corrupt.sqlite3")
    sidecar = Sidecar(database, "--push-registration-limit", "0")
    for number in range(300):
        registration_status(sidecar, f"token-{number}-" + "z" * 200)
    checkpoint = sqlite3.connect(database)
    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint.close()
    with open(database, "r+b") as file:
        file.seek(4096 * 2)
        file.write(os.urandom(4096 * 10))
    status, body = health_of(sidecar)
    check(status == 503 and ("malformed" in body["details"] or "corrupt" in body["details"]), f"corrupt file: {status} {body}")
    sidecar.stop()
    print(f"health: corrupted database: /healthz 503 ({body['reason'][:60]}; the log says why)")

    if os.geteuid() != 0:
        print("health: full disk and unwritable file need root (a tmpfs mount, another user); skipped")
        return
    mount = os.path.join(WORK, "small-disk")
    os.makedirs(mount)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mount], check=True)
    try:
        database = os.path.join(mount, "full.sqlite3")
        sidecar = Sidecar(database, "--push-registration-limit", "0")
        check(health_of(sidecar)[0] == 200, "healthz was not 200 with room on the disk")
        with open(os.path.join(mount, "filler"), "wb") as filler:
            try:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
            except OSError:
                pass
        statuses = [registration_status(sidecar, f"full-{number}-" + "y" * 3000) for number in range(20)]
        status, body = health_of(sidecar)
        check(status == 503 and "full" in body["details"], f"full disk: {status} {body}")
        check(all(code != 204 for code in statuses[-5:]), f"writes on a full disk kept answering 204: {statuses}")
        sidecar.stop()
        print("health: full disk: /healthz 503, writes refused")
    finally:
        subprocess.run(["umount", "-l", mount])

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        print("health: no 'nobody' user to run as; the unwritable-file check is skipped")
        return
    owned = os.path.join(WORK, "owned")
    os.makedirs(owned)
    os.chown(owned, nobody.pw_uid, nobody.pw_gid)
    database = os.path.join(owned, "readonly.sqlite3")
    sidecar = Sidecar(database, user="nobody")
    check(health_of(sidecar)[0] == 200, "healthz was not 200 for a writable file")
    os.chmod(database, 0o444)
    status, body = health_of(sidecar)
    check(status == 503 and "not writable" in body["details"], f"read-only file: {status} {body}")
    sidecar.stop()
    print("health: database file made read-only: /healthz 503")


def slowloris():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    database = os.path.join(WORK, "slowloris.sqlite3")
    sidecar = Sidecar(database, "--header-timeout", "3")
    sockets = []
    for _ in range(1030):
        slow = socket.socket()
        slow.bind(("127.0.0.2", 0))
        try:
            slow.connect(("127.0.0.1", sidecar.port))
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            pass
        sockets.append(slow)
    worst = 0.0
    for second in range(6):
        for slow in sockets:  # one more header line each, as a slowloris does
            try:
                slow.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pass
        started = time.time()
        connection = http.client.HTTPConnection("127.0.0.1", sidecar.port, timeout=5)
        connection.request("GET", "/healthz")
        check(connection.getresponse().status == 200, "127.0.0.1 was not served")
        connection.close()
        worst = max(worst, time.time() - started)
        time.sleep(1)
    check(worst < 1.0, f"127.0.0.1 waited {worst:.2f} s behind the slowloris")

    def closed(slow):
        slow.setblocking(False)
        try:
            return slow.recv(1) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True
    still_open = sum(1 for slow in sockets if not closed(slow))
    check(still_open == 0, f"{still_open} slow sockets were still open after the header timeout")
    for slow in sockets:
        slow.close()
    check(sidecar.stop() == 0, "the server did not stop cleanly")
    print(f"slowloris: 1030 slow sockets from 127.0.0.2; 127.0.0.1 served within {worst * 1000:.0f} ms throughout; "
          f"every slow socket closed after --header-timeout")


def parameters():
    """A query of hundreds of parameters once went unanswered and stayed
    counted as being received, so every later stop waited out its deadline."""
    sidecar = Sidecar(os.path.join(WORK, "parameters.sqlite3"))
    statuses = []
    for count, path in [(400, "/healthz"), (400, "/api/v1/regions/1/alerts"), (1001, "/api/v1/regions/1/alerts")]:
        query = "&".join(f"p{n}=1" for n in range(count))
        statuses.append(sidecar.request("GET", f"{path}?{query}", timeout=5)[0])
    check(statuses == [200, 200, 422], f"answers: {statuses}")
    started = time.time()
    code = sidecar.stop()
    stopped = time.time() - started
    check(code == 0 and stopped < 3, f"the stop after them: exit {code} in {stopped:.1f} s")
    print(f"parameters: 400 parameters answered 200 (1001: 422); SIGTERM afterwards exited 0 in {stopped:.2f} s")


def main():
    gorush, oba = Gorush(), OBA()
    try:
        for name in CHECKS:
            if name == "keepalive":
                keepalive()
            elif name == "alarms":
                alarms(gorush, oba, signal.SIGTERM)
                alarms(gorush, oba, signal.SIGKILL)
            elif name == "sends":
                sends(gorush, signal.SIGTERM)
                sends(gorush, signal.SIGKILL)
            elif name == "health":
                health()
            elif name == "slowloris":
                slowloris()
            elif name == "parameters":
                parameters()
            else:
                fail(f"unknown check {name}")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()

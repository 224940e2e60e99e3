#!/usr/bin/env python3
"""Several sidecar instances on one PostgreSQL, against the real binary.

    scale_out.py BIN ADMIN_URL PG_DATA_DIR [check ...]

ADMIN_URL is a postgres:// URL whose role may create databases; PG_DATA_DIR
is the cluster's data directory (the outage check stops and starts it with
pg_ctl as the postgres user). Each check gets its own database.

  alarms     two instances, 2000 alarms due in one cycle: each fires exactly once
  kill       kill -9 one instance mid-cycle: every alarm fires, twice only within
             the killed instance's page
  send       a send started on A, A killed: B finishes it
  throttle   30 registrations a minute per client across both instances
  feed       an alert edited through A is in B's feed within a second
  sources    two instances polling one alert source: a new alert pushed exactly
             once to each device, none again on later polls
  outage     PostgreSQL stopped while serving: 503s, no false 2xx, no crash;
             started again: full recovery without a restart
  frozen     PostgreSQL frozen (SIGSTOP) for 30 s: every request and /healthz
             answers 503 within a few seconds, saying why; thawed: recovery
  copy       copy-database round trip of a populated SQLite file
  urls       unreachable, wrong password, missing database: exit 1 naming the
             host, never the password; unknown sslmode or a malformed URL: exit 2
  passwords  the server, the relay, doctor, migrate, the CLI and --help with the
             password in every accepted URL form, text and JSON logs: the
             password appears in no line
"""
import glob
import shutil
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402  (the stand-ins and the process wrapper)
import alert_feed_server as feeds  # noqa: E402  (a GTFS-realtime feed built with gtfs-realtime-bindings)

BIN, ADMIN, PG_DATA = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
CHECKS = sys.argv[4:] or ["urls", "passwords", "alarms", "kill", "send", "throttle", "feed", "sources", "outage", "frozen", "copy"]
base.BIN = BIN
WORK = tempfile.mkdtemp(prefix="sidecar-scale-")
base.WORK = WORK
PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
check = base.check


def psql(sql, database="sidecar"):
    url = ADMIN.rsplit("/", 1)[0] + "/" + database
    subprocess.run(["psql", url, "-q", "-v", "ON_ERROR_STOP=1"], input=sql.encode(), check=True, capture_output=True)


def new_database(name):
    psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    psql(f"CREATE DATABASE {name}")
    return ADMIN.rsplit("/", 1)[0] + "/" + name


def pg_ctl(action):
    command = [f"{PG_BIN}/pg_ctl", "-D", PG_DATA, "-w", "-l", os.path.join(os.path.dirname(PG_DATA), "server.log")]
    command += ["-m", "fast", action] if action == "stop" else [action]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--"] + command
    subprocess.run(command, check=True, capture_output=True)


def rows(url, sql, attempts=3):
    """Runs SQL with psql; a failure is retried (a moment's refusal is not the check's subject) and then reported."""
    for attempt in range(attempts):
        done = subprocess.run(["psql", url, "-tA", "-c", sql], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.strip()
        time.sleep(1)
    base.fail(f"psql {sql!r}: {done.stderr.strip()}")


def create_alarms(url, regions, count):
    """Alarms due at once, made through an instance that fires nothing."""
    making = base.Sidecar(url, "--regions", regions, "--push-transport", "none", "--alarm-check-interval", "3600",
                          "--alarm-limit", "0", "--upstream-lookup-limit", "0", "--push-registration-limit", "0",
                          "--max-alarms-per-device", "0")
    def make(start):
        for number in range(start, count, 8):
            status, _ = making.request("POST", "/api/v2/regions/1/alarms", body=json.dumps({
                "user_push_id": f"alarm-user-{number}", "operating_system": "ios", "stop_id": f"s{number % 400}",
                "trip_id": f"t{number % 400}", "service_date": base.SERVICE_DATE, "seconds_before": 600}),
                headers={"Content-Type": "application/json"})
            check(status == 201, f"alarm creation answered {status}")
    threads = [threading.Thread(target=make, args=(start,)) for start in range(8)]
    [thread.start() for thread in threads]
    [thread.join() for thread in threads]
    check(making.stop() == 0, "the creating instance did not stop cleanly")
    # The creating instance has no transport: if its one check ran while the
    # alarms were being made, it pushed the due ones an hour ahead. Make them
    # all due again, so the instances under test start from the same state.
    rows(url, "UPDATE alarms SET next_check_at = 0, failure_count = 0")


def alarms(gorush, oba, kill=False):
    url = new_database("scale_kill" if kill else "scale_alarms")
    regions = base.regions_file(oba)
    create_alarms(url, regions, 2000)
    gorush.reset()
    gorush.delay = 0.3
    flags = ["--regions", regions, "--gorush-url", gorush.url, "--alarm-check-interval", "2"]
    a, b = base.Sidecar(url, *flags), base.Sidecar(url, *flags)
    if kill:
        base.wait_for(lambda: gorush.requests >= 3, 30, "no push arrived")
        a.process.kill()
        a.process.wait()
    base.wait_for(lambda: rows(url, "SELECT COUNT(*) FROM alarms") == "0", 120, "alarms were left unfired")
    check(b.stop() == 0, "instance B did not stop cleanly")
    if not kill:
        check(a.stop() == 0, "instance A did not stop cleanly")
    pushes = dict(gorush.pushes)
    lost = [n for n in range(2000) if f"alarm-user-{n}" not in pushes]
    twice = sum(1 for count in pushes.values() if count > 1)
    check(not lost, f"{len(lost)} alarms never fired")
    fired_by_a = a.text().count("alarm cycle")
    fired_by_b = b.text().count("alarm cycle")
    if kill:
        check(twice <= 500, f"{twice} alarms fired twice: more than the killed instance's page of 500")
        print(f"kill: kill -9 on one of two instances mid-cycle; all 2000 alarms fired, {twice} twice (a page is 500)")
    else:
        check(twice == 0, f"{twice} alarms fired twice with two instances")
        check(fired_by_a > 0 and fired_by_b > 0, "one instance did all the work")
        print("alarms: two instances, one PostgreSQL: 2000 alarms due in one cycle fired exactly once in total, both instances firing")


def send(gorush):
    url = new_database("scale_send")
    base.cli(url, "region", "set", "--id", "1", "--agency-id", "1")
    alert = base.cli(url, "alert", "create", "--region", "1", "--header", "Route 44 detoured", "--start",
                     time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))).split()[2]
    base.cli(url, "alert", "publish", alert)
    key = base.cli(url, "apikey", "create", "--name", "test", "--region", "all", "--push").strip().splitlines()[-1]
    now = int(time.time() * 1000)
    values = ",".join(f"(1, 'device-{n}', 'ios', 0, 0, {now}, {now})" for n in range(5000))
    psql("INSERT INTO push_registrations (region_id, token, operating_system, apns_sandbox, test_device, created_at, last_seen_at) "
         f"VALUES {values}", database="scale_send")
    gorush.reset()
    gorush.delay = 0.3
    flags = ["--gorush-url", gorush.url, "--send-lease-seconds", "5"]
    a, b = base.Sidecar(url, *flags), base.Sidecar(url, *flags)
    status, _ = a.request("POST", f"/admin/api/alerts/{alert}/sends", body="audience=all",
                          headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-www-form-urlencoded"})
    check(status == 202, f"starting the send on A answered {status}")
    base.wait_for(lambda: gorush.requests > 0, 20, "no alert push arrived")
    a.process.kill()
    a.process.wait()
    gorush.delay = 0.0
    base.wait_for(lambda: rows(url, "SELECT status FROM alert_sends") == "done", 90, "B did not finish the send")
    check(b.stop() == 0, "instance B did not stop cleanly")
    pushes = dict(gorush.pushes)
    twice = sum(1 for count in pushes.values() if count > 1)
    check(len(pushes) == 5000, f"{5000 - len(pushes)} registrations never got the alert")
    check(twice <= 1000, f"{twice} pushed twice (more than A's page of 1000)")
    print(f"send: a send started on A, A killed; B finished it by itself: 5000 delivered, {twice} twice")


def throttle():
    url = new_database("scale_throttle")
    a, b = base.Sidecar(url), base.Sidecar(url)
    if time.time() % 60 > 50:  # keep the 40 requests inside one minute window
        time.sleep(61 - time.time() % 60)
    statuses = []
    for number in range(40):
        sidecar = a if number % 2 == 0 else b
        statuses.append(sidecar.request("POST", "/api/v2/regions/1/push_registrations", body=f"token=token-{number:05d}&operating_system=ios",
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})[0])
    allowed = statuses.count(204)
    check(statuses[:30] == [204] * 30 and statuses[30:] == [429] * 10, f"across two instances: {statuses}")
    check(a.stop() == 0 and b.stop() == 0, "an instance did not stop cleanly")
    print(f"throttle: 40 registrations from one client alternating between two instances: {allowed} allowed, the rest 429")


def feed():
    url = new_database("scale_feed")
    base.cli(url, "region", "set", "--id", "1", "--agency-id", "1")
    key = base.cli(url, "apikey", "create", "--name", "test", "--region", "all", "--push").strip().splitlines()[-1]
    a, b = base.Sidecar(url), base.Sidecar(url)
    status, body = b.request("GET", "/api/v1/regions/1/alerts")
    check(status == 200 and b"Elevator out" not in body, "B's feed before the edit")
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/x-www-form-urlencoded"}
    status, body = a.request("POST", "/admin/api/regions/1/alerts", body="header=Elevator out at Westlake&start=" + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60)),
                             headers=auth)
    check(status == 201, f"creating through A answered {status}")
    alert = json.loads(body)["id"]
    status, _ = a.request("POST", f"/admin/api/alerts/{alert}/publish", headers=auth)
    published = time.time()
    seen = None
    while time.time() - published < 3:
        if b"Elevator out at Westlake" in b.request("GET", "/api/v1/regions/1/alerts")[1]:
            seen = time.time() - published
            break
        time.sleep(0.05)
    check(seen is not None and seen <= 1.0, f"B's feed showed the edit after {seen} s")
    check(a.stop() == 0 and b.stop() == 0, "an instance did not stop cleanly")
    print(f"feed: an alert published through A was in B's feed after {seen * 1000:.0f} ms")


def outage():
    url = new_database("scale_outage")
    sidecar = base.Sidecar(url, "--push-registration-limit", "0")
    acknowledged = []

    def register(token):
        status, _ = sidecar.request("POST", "/api/v2/regions/1/push_registrations", body=f"token={token}&operating_system=ios",
                                    headers={"Content-Type": "application/x-www-form-urlencoded"})
        if status == 204:
            acknowledged.append(token)
        return status

    check(register("before-outage") == 204, "a registration before the outage failed")
    pg_ctl("stop")
    try:
        time.sleep(0.5)
        statuses = [register(f"during-{n}") for n in range(20)]
        check(all(status == 503 for status in statuses), f"writes while PostgreSQL is down answered {set(statuses)}")
        time.sleep(1.1)
        check(sidecar.request("GET", "/healthz")[0] == 503, "healthz was not 503 while PostgreSQL was down")
        check(sidecar.process.poll() is None, "the sidecar died during the outage")
    finally:
        pg_ctl("start")
    recovered = None
    started = time.time()
    while time.time() - started < 20:
        time.sleep(0.5)
        if sidecar.request("GET", "/healthz")[0] == 200 and register(f"after-{int(time.time() * 1000)}") == 204:
            recovered = time.time() - started
            break
    check(recovered is not None, "the sidecar did not recover after PostgreSQL came back")
    stored = set(rows(url, "SELECT token FROM push_registrations").split())
    check(set(acknowledged) <= stored, "an acknowledged registration was lost")
    check(not any(token.startswith("during-") for token in stored), "a write refused during the outage was stored")
    check(sidecar.stop() == 0, "the sidecar did not stop cleanly")
    print(f"outage: PostgreSQL stopped while serving: every write 503, /healthz 503, no crash; "
          f"recovered {recovered:.1f} s after it came back, without a restart")


def postgres_pids():
    postmaster = int(open(os.path.join(PG_DATA, "postmaster.pid")).readline())
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    return [postmaster] + [int(pid) for pid in children]


def frozen():
    """SIGSTOP every PostgreSQL process: the kernel keeps accepting and
    acknowledging, nothing answers. Requests must not hang with it."""
    url = new_database("scale_frozen")
    sidecar = base.Sidecar(url, "--push-registration-limit", "0", "--database-timeout", "3", "--metrics-listen", "127.0.0.1:0")

    def register(token):
        started = time.time()
        status, _ = sidecar.request("POST", "/api/v2/regions/1/push_registrations", body=f"token={token}&operating_system=ios",
                                    headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=60)
        return status, time.time() - started

    check(register("before-outage")[0] == 204, "a registration before the freeze failed")
    # Stop every process, then look again: a backend forked while the list
    # was read is not in it and would serve writes (a true 204). Once the
    # postmaster is stopped nothing new is forked, so the second look is
    # the last that finds anything.
    pids = []
    while True:
        fresh = [pid for pid in postgres_pids() if pid not in pids]
        if not fresh:
            break
        for pid in fresh:
            os.kill(pid, 19)  # SIGSTOP
        pids += fresh
    frozen_at = time.time()
    try:
        results = []
        threads = [threading.Thread(target=lambda n=n: results.append(register(f"frozen-{n}"))) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)  # only catches a hang
        # Judged by the event, not the clock: PostgreSQL stays frozen until
        # these checks are done, so every answer came while it was frozen
        # (the statement timeout, --database-timeout 3, gave them).
        slowest = max((seconds for _, seconds in results), default=0)
        check(len(results) == 8 and all(status == 503 for status, _ in results), f"writes while PostgreSQL was frozen: {results}")
        time.sleep(1.1)  # past the one-second /healthz verdict cache
        started = time.time()
        status, body = sidecar.request("GET", "/healthz", timeout=60)
        health_seconds = time.time() - started
        check(status == 503 and b"database" in body, f"/healthz while frozen: {status} {body} after {health_seconds:.1f} s")
        check(url.split("@")[1] not in body.decode(), "the public /healthz named the database")
        check(sidecar.process.poll() is None, "the sidecar died while PostgreSQL was frozen")
        frozen_for = time.time() - frozen_at
    finally:
        for pid in pids:
            os.kill(pid, 18)  # SIGCONT
    recovered = None
    started = time.time()
    while time.time() - started < 120:  # only catches a sidecar that never recovers
        if sidecar.request("GET", "/healthz", timeout=30)[0] == 200 and register(f"thawed-{int(time.time() * 1000)}")[0] == 204:
            recovered = time.time() - started
            break
        time.sleep(0.5)
    check(recovered is not None, "the sidecar did not recover after PostgreSQL thawed")
    check(sidecar.stop() == 0, "the sidecar did not stop cleanly")
    print(f"frozen: PostgreSQL stopped with SIGSTOP for {frozen_for:.0f} s: 8 concurrent writes answered 503 while it was frozen "
          f"(slowest {slowest:.1f} s), "
          f"/healthz 503 naming the failing check in {health_seconds:.1f} s; recovered {recovered:.1f} s after SIGCONT")


def copy():
    source = os.path.join(WORK, "source.sqlite3")
    sidecar = base.Sidecar(source, "--push-registration-limit", "0", "--alarm-limit", "0", "--live-activity-limit", "0")
    for number in range(250):
        sidecar.request("POST", "/api/v2/regions/1/push_registrations", body=f"token=token-{number:05d}&operating_system=ios&locale=es-MX",
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
        sidecar.request("POST", "/api/v2/regions/1/live_activities",
                        body=f"activity_id=a{number}&push_token=activity-token-{number}&stop_id=1_1&route_short_name=44&trip_headsign=Ballard",
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
        sidecar.request("POST", "/api/v2/regions/1/ghost_bus_reports",
                        body=f"user_identifier=u{number}&trip_identifier=t&service_date=1&wait_duration_minutes=5",
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    sidecar.stop()
    base.cli(source, "region", "set", "--id", "1", "--agency-id", "1")
    alert = base.cli(source, "alert", "create", "--region", "1", "--header", "Detour", "--start", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))).split()[2]
    base.cli(source, "alert", "translate", alert, "--language", "es", "--header", "Desvío")
    base.cli(source, "apikey", "create", "--name", "copy", "--region", "all")
    url = new_database("scale_copy")
    done = subprocess.run([BIN, "copy-database", "--from", source, "--to", url], capture_output=True, text=True)
    check(done.returncode == 0, f"copy-database failed: {done.stderr}")
    again = subprocess.run([BIN, "copy-database", "--from", source, "--to", url], capture_output=True, text=True)
    check(again.returncode == 1 and "not empty" in again.stderr, "a non-empty target was not refused")
    back = os.path.join(WORK, "back.sqlite3")
    done = subprocess.run([BIN, "copy-database", "--from", url, "--to", back], capture_output=True, text=True)
    check(done.returncode == 0, f"copying back failed: {done.stderr}")
    for table in ["push_registrations", "live_activities", "ghost_bus_reports", "alerts", "alert_translations", "api_keys"]:
        original = sqlite3.connect(source).execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
        returned = sqlite3.connect(back).execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
        check(original == returned, f"{table} changed in the round trip")
    # The copy is a working database: a new alert gets the next id.
    created = base.cli(url, "alert", "create", "--region", "1", "--header", "After", "--start", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))).split()[2]
    check(int(created) == int(alert) + 1, f"the new alert got id {created}")
    print("copy: a populated SQLite file copied to PostgreSQL and back, every row identical; a non-empty target refused")


def urls():
    server = ADMIN.split("@", 1)[1].split("/", 1)[0]  # host:port
    user = ADMIN.split("://", 1)[1].split(":", 1)[0]
    password = ADMIN.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    cases = [
        (f"postgres://{user}:not-the-password@{server}/sidecar", 1, "password authentication failed"),
        (f"postgres://{user}:{password}@{server}/no_such_database", 1, "does not exist"),
        ("postgres://nobody:secret-word@127.0.0.1:1/sidecar", 1, "Connection refused"),
        (f"postgres://{user}:secret-word@{server}/sidecar?sslmode=sometimes", 2, "unknown sslmode"),
        ("postgresql://[not a url", 2, "cannot be read"),
    ]
    for url, status, message in cases:
        done = subprocess.run([BIN, "serve", "--database", url, "--port", "0"], capture_output=True, text=True, timeout=30)
        check(done.returncode == status, f"{url}: exit status {done.returncode}, wanted {status}: {done.stderr}")
        check(message in done.stderr, f"{url}: {done.stderr}")
        check(all(secret not in done.stderr for secret in ("not-the-password", "secret-word", password)),
              f"the password was printed: {done.stderr}")
        if status == 1:
            check(server.split(":")[0] in done.stderr, f"the host is not named: {done.stderr}")
    print("urls: a wrong password, a missing database and a closed port exit 1 naming the host (never the password); "
          "an unknown sslmode and a malformed URL exit 2")


def passwords():
    """Every line a run prints, with the real password in each URL form."""
    password = ADMIN.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    user = ADMIN.split("://", 1)[1].split(":", 1)[0]
    server = ADMIN.split("@", 1)[1].split("/", 1)[0]
    new_database("scale_passwords")
    new_database("scale_passwords_relay")
    forms = [f"postgres://{user}:{password}@{server}/scale_passwords",
             f"postgresql://{user}:{password}@{server}/scale_passwords?sslmode=disable",
             f"postgres://{user}@{server}/scale_passwords?password={password}&application_name=sidecar"]
    # The relay delivers through FCM here (never reached): a service account of its own.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    account = os.path.join(base.WORK, "passwords-service-account.json")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with open(account, "w") as handle:
        json.dump({"type": "service_account", "project_id": "p", "client_email": "relay@p.iam.gserviceaccount.com",
                   "private_key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()).decode(),
                   "token_uri": "http://127.0.0.1:1/token"}, handle)
    output = []
    for index, url in enumerate(forms):
        log_format = ["--log-format", "json"] if index % 2 else []
        output.append(subprocess.run([BIN, "migrate", "--database", url, *log_format], capture_output=True, text=True).stderr)
        sidecar = base.Sidecar(url, "--log-level", "debug", *log_format)
        status, _ = sidecar.request("POST", "/api/v2/regions/1/push_registrations", body="token=passwords-device-1&operating_system=ios",
                                    headers={"Content-Type": "application/x-www-form-urlencoded"})
        check(status == 204, f"registration: {status}")
        sidecar.request("GET", "/healthz")
        check(sidecar.stop() == 0, "the server did not stop cleanly")
        output.append(sidecar.text())
        for arguments in (["doctor"], ["alert", "list", "--region", "1"], ["source", "list"], ["export", "--region", "1"]):
            done = subprocess.run([BIN, *arguments, "--database", url], capture_output=True, text=True, timeout=60)
            output.append(done.stdout + done.stderr)
        environment = {**os.environ, "SIDECAR_DATABASE": url}
        help_text = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, env=environment).stdout
        output.append(help_text)
        relay_url = url.replace("/scale_passwords", "/scale_passwords_relay")
        relay = subprocess.Popen([BIN, "relay", "--port", "0", "--database", relay_url, "--fcm-service-account", account, *log_format],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        base.STARTED.append(relay)
        lines = []
        deadline = time.time() + 30
        while time.time() < deadline:
            line = relay.stdout.readline()
            lines.append(line)
            if "relay listening" in line or relay.poll() is not None:
                break
        relay.terminate()
        lines.append(relay.communicate(timeout=30)[0])
        check(any("relay listening" in line for line in lines), f"the relay did not start: {''.join(lines)[-2000:]}")
        output.append("".join(lines))
    leaked = [line for text in output for line in text.splitlines() if password in line]
    check(not leaked, "the password was printed:\n" + "\n".join(leaked[:5]))
    check(any("postgres://" in text and "scale_passwords" in text for text in output), "the database was not named at all")
    print(f"passwords: the server (text and JSON logs at debug), the relay, migrate, doctor, the CLI and --help, with the password "
          f"in {len(forms)} URL forms: {sum(len(t.splitlines()) for t in output)} lines, the password in none, the database named")


def sources(gorush):
    """Both instances poll the same source (one at a time, under its lease):
    a new alert is pushed once to each device in all, and never again."""
    url = new_database("scale_sources")
    base.cli(url, "region", "set", "--id", "1", "--agency-id", "1")
    now = int(time.time() * 1000)
    values = ",".join(f"(1, 'src-{n}', 'ios', 0, 0, {now}, {now})" for n in range(50))
    psql("INSERT INTO push_registrations (region_id, token, operating_system, apns_sandbox, test_device, created_at, last_seen_at) "
         f"VALUES {values}", database="scale_sources")
    started = int(time.time())

    def alert(entity_id, header):
        return feeds.make_alert(entity_id, header={"en": header}, cause="TECHNICAL_PROBLEM", effect="NO_SERVICE", severity="SEVERE",
                                active=[(started - 60, started + 7200)], entities=[{"agency_id": "1"}])

    feed = feeds.AlertFeedServer([alert("old", "Elevator out at Westlake")])
    gorush.reset()
    flags = ["--gorush-url", gorush.url, "--send-lease-seconds", "5"]
    a, b = base.Sidecar(url, *flags), base.Sidecar(url, *flags)
    # The feed server is on loopback, which a source reaches only when allowed.
    source = base.cli(url, "source", "add", "--region", "1", "--url", feed.url, "--push", "auto", "--interval", "15",
                      "--allow-private", "true").split()[1]

    def polls():
        shown = base.cli(url, "source", "show", source)
        return int(next(line.split(":")[1] for line in shown.splitlines() if line.startswith("polls:")).split()[0])

    base.wait_for(lambda: polls() >= 1, 20, "neither instance polled the new source")
    feed.set_alerts([alert("old", "Elevator out at Westlake"), alert("new", "Line 1 suspended")])
    # Due at once on both: each instance's next tick sees it; the lease lets one poll.
    for _ in range(3):
        before = polls()
        base.cli(url, "source", "edit", source, "--interval", "15")
        base.wait_for(lambda: polls() > before, 20, "the edited source was not polled again")
    base.wait_for(lambda: len(gorush.pushes) >= 50, 30, "the new alert did not reach every device")
    time.sleep(3)
    pushes = dict(gorush.pushes)
    check(len(pushes) == 50 and set(pushes.values()) == {1}, f"pushes per device: {sorted(set(pushes.values()))}, {len(pushes)} devices")
    check(a.stop() == 0 and b.stop() == 0, "an instance did not stop cleanly")
    feed.close()
    print(f"sources: two instances polling one source ({polls()} polls in all): the new alert reached 50 devices once each; "
          "the baseline alert and later polls pushed nothing")


def main():
    gorush, oba = base.Gorush(), base.OBA()
    for name in CHECKS:
        if name == "alarms":
            alarms(gorush, oba)
        elif name == "kill":
            alarms(gorush, oba, kill=True)
        elif name in ("send", "throttle", "feed", "outage", "frozen", "copy", "urls", "sources", "passwords"):
            {"send": lambda: send(gorush), "throttle": throttle, "feed": feed, "outage": outage, "frozen": frozen, "copy": copy,
             "urls": urls, "sources": lambda: sources(gorush), "passwords": passwords}[name]()
        else:
            base.fail(f"unknown check {name}")
    shutil.rmtree(WORK, ignore_errors=True)  # kept when a check failed, for its logs


if __name__ == "__main__":
    main()

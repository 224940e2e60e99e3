#!/usr/bin/env python3
"""What an operator does with the real binary, checked with other people's tools.

    operations.py BIN [check ...]

  metrics   /metrics on --metrics-listen read by prometheus_client's parser;
            counts after a known sequence of requests
  logs      --log-format json at debug: every line one JSON object, no secret
  backup    `sidecar backup` while four clients write: every copy passes
            PRAGMA integrity_check, holds every write acknowledged before it
            began, and serves when started
  doctor    `sidecar doctor` against working stand-ins (OneBusAway, gorush,
            and, when SIDECAR_PUSH_PEERS="DIR APNS_PORT FCM_PORT" names
            push_peers.py's, APNs and FCM) exits 0; a broken configuration
            exits 1 with a fix under each failure
  exchange  export -> import -> export through the CLI yields the same
            document; dry run writes nothing; a second import changes nothing;
            an unknown field is skipped and listed with its path (refused with --strict)
  demo      `serve --demo`: the curl commands of GET /demo, run as printed,
            make an alarm fire and a Live Activity update in the log
  probe     `sidecar probe` against the binary (the demo region, with a real
            departure for the alarm check) passes and leaves nothing behind
"""
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402  (the stand-ins and the process wrapper)
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
CHECKS = sys.argv[2:] or ["metrics", "logs", "backup", "doctor", "exchange", "demo", "probe"]
WORK = base.WORK
check, fail = base.check, base.fail


def metrics_port(sidecar):
    text = sidecar.text()
    check("metrics listening" in text, f"no metrics listener:\n{text}")
    return int(text.split("metrics listening", 1)[1].split("/metrics", 1)[0].rsplit(":", 1)[1])


def register(sidecar, token, os_name="ios"):
    return sidecar.request("POST", "/api/v2/regions/1/push_registrations", f"token={token}&operating_system={os_name}",
                           {"Content-Type": "application/x-www-form-urlencoded"})[0]


def metrics():
    oba = base.OBA()
    sidecar = base.Sidecar(os.path.join(WORK, "metrics.sqlite3"), "--regions", base.regions_file(oba),
                           "--metrics-listen", "127.0.0.1:0")
    try:
        statuses = [register(sidecar, f"token-{n:04d}") for n in range(3)] + [register(sidecar, "droid-token-1", "android")]
        statuses.append(sidecar.request("POST", "/api/v2/regions/1/push_registrations", "token=x", {"Content-Type": "application/x-www-form-urlencoded"})[0])
        statuses.append(sidecar.request("GET", "/healthz")[0])
        statuses.append(sidecar.request("GET", "/nothing/here")[0])
        check(statuses == [204, 204, 204, 204, 422, 200, 404], f"unexpected statuses {statuses}")
        port = metrics_port(sidecar)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as response:
            check(response.headers["Content-Type"].startswith("text/plain; version=0.0.4"), response.headers["Content-Type"])
            text = response.read().decode()
        families = {family.name: family for family in text_string_to_metric_families(text)}
        for name, family in families.items():
            check(name.startswith("sidecar_"), f"{name} is not prefixed sidecar_")
            check(family.documentation, f"{name} has no HELP")
            check(family.type in ("counter", "gauge", "histogram"), f"{name} has type {family.type}")

        def value(name, **labels):
            for family in families.values():
                for sample in family.samples:
                    if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                        return sample.value
            return None

        route = "/api/v2/regions/:region/push_registrations"
        check(families["sidecar_http_requests"].type == "counter", "requests is not a counter")
        check(value("sidecar_http_requests_total", route=route, method="POST", status="204") == 4, "4 registrations counted")
        check(value("sidecar_http_requests_total", route=route, method="POST", status="422") == 1, "1 refusal counted")
        check(value("sidecar_http_requests_total", route="unmatched", method="GET", status="404") == 1, "the 404 counted")
        check(value("sidecar_http_request_duration_seconds_count", route=route, method="POST") == 5, "5 durations observed")
        check(value("sidecar_http_request_duration_seconds_bucket", route=route, method="POST", le="+Inf") == 5, "+Inf bucket")
        check(families["sidecar_http_request_duration_seconds"].type == "histogram", "duration is a histogram")
        check(value("sidecar_push_registrations", region="1", platform="ios") == 3, "3 iOS registrations")
        check(value("sidecar_push_registrations", region="1", platform="android") == 1, "1 Android registration")
        for name in ["sidecar_alarms_fired_total", "sidecar_alarms_expired_total", "sidecar_alarms_reaped_total",
                     "sidecar_alarm_cycle_duration_seconds_count", "sidecar_live_activity_cycle_duration_seconds_count",
                     "sidecar_alert_sends_in_progress", "sidecar_process_cpu_seconds_total", "sidecar_process_open_fds",
                     "sidecar_process_max_fds", "sidecar_process_start_time_seconds", "sidecar_http_connections_open"]:
            check(value(name) is not None, f"{name} is missing")
        check(value("sidecar_process_resident_memory_bytes") > 1e6, "resident memory")
        check(value("sidecar_build_info") == 1, "build info")
        print(f"metrics: {len(families)} families parsed by prometheus_client, every one sidecar_ with HELP and TYPE; "
              "request, duration, registration and process counts match the requests made")
    finally:
        sidecar.stop()
        oba.shutdown()


def logs():
    oba = base.OBA()
    sidecar = base.Sidecar(os.path.join(WORK, "logs.sqlite3"), "--regions", base.regions_file(oba), "--log-format", "json",
                           "--log-level", "debug", "--gorush-webhook-secret", "HOOK-SECRET-9")
    secrets = ["SECRET-TOKEN-77", "RIDER-UID-55", "HOOK-SECRET-9", "ADMIN-KEY-GUESS"]
    try:
        sidecar.request("POST", "/api/v2/regions/1/push_registrations?app_uid=RIDER-UID-55",
                        "token=SECRET-TOKEN-77&operating_system=ios", {"Content-Type": "application/x-www-form-urlencoded"})
        sidecar.request("DELETE", "/api/v2/regions/1/push_registrations?token=SECRET-TOKEN-77&app_uid=RIDER-UID-55")
        sidecar.request("GET", "/admin/api/regions", headers={"Authorization": "Bearer ADMIN-KEY-GUESS"})
        sidecar.request("POST", "/webhooks/gorush", json.dumps({"logs": [{"type": "failed-push", "token": "SECRET-TOKEN-77",
                                                                            "error": "Unregistered"}]}),
                        {"Authorization": "Bearer HOOK-SECRET-9", "Content-Type": "application/json"})
        sidecar.request("GET", "/healthz\r\nforged: yes")
    except Exception:
        pass
    finally:
        sidecar.stop()
        oba.shutdown()
    lines = sidecar.text().splitlines()
    check(len(lines) >= 6, f"too few lines: {lines}")
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            fail(f"not one JSON object: {line!r}")
        check(isinstance(record, dict) and {"time", "level", "message"} <= record.keys(), f"missing keys: {line}")
        check(record["level"] in ("debug", "info", "warn", "error"), f"level {record['level']}")
        for secret in secrets:
            check(secret not in line, f"a secret was logged: {line}")
    check(any(json.loads(line).get("route") == "/api/v2/regions/:region/push_registrations" for line in lines), "no request line")
    print(f"logs: {len(lines)} lines at debug, each one JSON object with time, level and message; no token, app_uid, key or secret")


def run(*arguments, stdin=None):
    return subprocess.run([BIN, *arguments], capture_output=True, text=True, input=stdin, timeout=120)


def tokens_in(database):
    connection = sqlite3.connect(database)
    found = {row[0] for row in connection.execute("SELECT token FROM push_registrations")}
    connection.close()
    return found


def backup():
    database = os.path.join(WORK, "live.sqlite3")
    sidecar = base.Sidecar(database, "--push-registration-limit", "0")
    acknowledged, lock, stop = [], threading.Lock(), threading.Event()

    def writer(number):
        sequence = 0
        while not stop.is_set():
            token = f"backup-{number}-{sequence}"
            if register(sidecar, token) == 204:
                with lock:
                    acknowledged.append(token)
            sequence += 1

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in writers:
        thread.start()
    copies = []
    try:
        time.sleep(1)
        for number in range(3):
            with lock:
                before = set(acknowledged)
            target = os.path.join(WORK, f"backup-{number}.sqlite3")
            started = time.time()
            done = run("backup", "--to", target, "--database", database)
            check(done.returncode == 0, f"backup failed: {done.stdout}{done.stderr}")
            elapsed = time.time() - started
            check(base.integrity(target) == "ok", f"backup {number} fails integrity_check")
            held = tokens_in(target)
            check(before <= held, f"backup {number} lacks {len(before - held)} acknowledged writes")
            copies.append((len(held), elapsed))
            time.sleep(0.5)
        refused = run("backup", "--to", os.path.join(WORK, "backup-0.sqlite3"), "--database", database)
        check(refused.returncode != 0 and "--replace" in refused.stderr + refused.stdout, "an existing file was overwritten without --replace")
    finally:
        stop.set()
        for thread in writers:
            thread.join()
        check(sidecar.stop() == 0, "the live server did not stop cleanly")
    check(len(acknowledged) > copies[-1][0] > copies[0][0] > 0, f"the writers did not write during the backups: {copies}, {len(acknowledged)}")
    restored = base.Sidecar(os.path.join(WORK, "backup-2.sqlite3"))
    try:
        check(restored.request("GET", "/healthz")[0] == 200, "the restored copy is not healthy")
        check(register(restored, "after-restore") == 204, "the restored copy does not take writes")
    finally:
        check(restored.stop() == 0, "the restored server did not stop cleanly")
    print(f"backup: 3 copies during {len(acknowledged)} writes from 4 clients ({', '.join(f'{n} rows in {t:.2f} s' for n, t in copies)}), "
          "each integrity_check ok with every earlier acknowledged write; the last one serves")


def doctor():
    oba, gorush = base.OBA(), base.Gorush()
    regions = base.regions_file(oba)
    database = os.path.join(WORK, "doctor.sqlite3")
    working = ["doctor", "--database", database, "--regions", regions, "--oba-api-key", "KEY-DOCTOR-1", "--gorush-url", gorush.url,
               "--public-url", "https://sidecar.example.org", "--trusted-proxies", "127.0.0.1"]
    peers = os.environ.get("SIDECAR_PUSH_PEERS", "").split()
    if len(peers) == 3:
        directory, apns_port, fcm_port = peers
        working += ["--apns-key-file", f"{directory}/apns.p8", "--apns-key-id", "KEYID12345", "--apns-team-id", "TEAMID1234",
                    "--apns-url", f"https://127.0.0.1:{apns_port}", "--apns-ca-file", f"{directory}/ca.pem",
                    "--fcm-service-account", f"{directory}/service-account.json", "--fcm-url", f"http://127.0.0.1:{fcm_port}"]
    try:
        done = run(*working)
        check(done.returncode == 0, f"doctor failed a working configuration:\n{done.stdout}{done.stderr}")
        names = ["configuration", "database", "regions", "oba region 1", "gorush", "disk"] + (["apns", "fcm"] if peers else [])
        for name in names:
            check(re.search(rf"^  ok +{re.escape(name)} ", done.stdout, re.M), f"no ok line for {name}:\n{done.stdout}")
        check("KEY-DOCTOR-1" not in done.stdout + done.stderr, "the API key was printed")
        garbage = os.path.join(WORK, "not-a-key.p8")
        with open(garbage, "w") as file:
            file.write("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()
        # A state directory nobody made yet is a note (serve makes it); one
        # that cannot be made (a file stands where it would go) fails.
        creatable = run("doctor", "--offline", "--database", os.path.join(WORK, "no", "such", "dir", "db.sqlite3"), "--regions", regions)
        check("  ok    database" in creatable.stdout and "serve creates" in creatable.stdout, f"a creatable directory:\n{creatable.stdout}")
        broken = run("doctor", "--database", os.path.join(regions, "dir", "db.sqlite3"), "--regions", regions,
                     "--gorush-url", f"http://127.0.0.1:{port}", "--apns-key-file", garbage, "--apns-key-id", "KEYID12345",
                     "--apns-team-id", "TEAMID1234")
        check(broken.returncode == 1, f"doctor passed a broken configuration:\n{broken.stdout}")
        lines = broken.stdout.splitlines()
        failed = [index for index, line in enumerate(lines) if line.startswith("  FAIL")]
        check({lines[i].split()[1] for i in failed} >= {"database", "oba", "gorush", "apns"}, f"missing failures:\n{broken.stdout}")
        check(all(lines[i + 1].startswith("        fix: ") for i in failed), f"a failure without a fix:\n{broken.stdout}")
        check(lines[-1] == f"{len(failed)} checks failed", lines[-1])
    finally:
        oba.shutdown()
        gorush.shutdown()
    print(f"doctor: {len(names)} checks ok against working stand-ins{' (APNs over HTTP/2 and FCM included)' if peers else ''}; "
          f"a broken configuration exits 1 with {len(failed)} failures, each with its fix")


def exchange():
    source = os.path.join(WORK, "exchange-source.sqlite3")
    oba = base.OBA()
    base.cli(source, "region", "set", "--id", "1", "--agency-id", "1")
    alert = base.cli(source, "alert", "create", "--region", "1", "--header", "Route 44 detoured", "--description", "Skips 45th St",
                     "--cause", "CONSTRUCTION", "--effect", "DETOUR", "--severity", "WARNING", "--start", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))).split()[2]
    base.cli(source, "alert", "translate", alert, "--language", "es", "--header", "Ruta 44 desviada", "--description", "Salta la calle 45")
    base.cli(source, "alert", "publish", alert)
    sidecar = base.Sidecar(source, "--regions", base.regions_file(oba))
    try:
        for number in range(5):
            check(register(sidecar, f"move-device-{number}", "ios" if number % 2 else "android") == 204, "registration refused")
    finally:
        sidecar.stop()
        oba.shutdown()
    first = os.path.join(WORK, "export-1.json")
    done = run("export", "--region", "1", "--to", first, "--database", source)
    check(done.returncode == 0, f"export failed: {done.stderr}")
    document = json.load(open(first))
    check(document.get("format") == "sidecar-export/1", f"format {document.get('format')}")

    target = os.path.join(WORK, "exchange-target.sqlite3")
    # A dry run only reads: against no database it refuses, naming the path, and creates none.
    missing = run("import", "--file", first, "--dry-run", "--database", target)
    check(missing.returncode == 1 and target in missing.stderr and not os.path.exists(target),
          f"a dry run against no database: {missing.stdout}{missing.stderr}")
    check(run("migrate", "--database", target).returncode == 0, "migrate failed")
    dry = run("import", "--file", first, "--dry-run", "--database", target)
    check(dry.returncode == 0 and "5" in dry.stdout, f"dry run: {dry.stdout}{dry.stderr}")
    check(not tokens_in(target), "the dry run wrote registrations")
    done = run("import", "--file", "-", "--database", target, stdin=open(first).read())
    check(done.returncode == 0, f"import from standard input failed: {done.stderr}")
    again = run("import", "--file", first, "--database", target)
    check(again.returncode == 0, f"second import failed: {again.stderr}")
    check(tokens_in(target) == {f"move-device-{n}" for n in range(5)}, "registrations were not imported exactly once")
    second = run("export", "--region", "1", "--database", target)
    check(second.returncode == 0, f"second export failed: {second.stderr}")
    moved = json.loads(second.stdout)
    for each in (document, moved):
        each.pop("exported_at", None)
    check(moved == document, "export -> import -> export changed the document")

    document["alerts"][0]["surprise"] = True
    bad = os.path.join(WORK, "export-bad.json")
    json.dump(document, open(bad, "w"))
    refused = run("import", "--file", bad, "--strict", "--database", target)
    check(refused.returncode != 0 and "alerts[0].surprise" in refused.stderr, f"--strict took an unknown field: {refused.stdout}{refused.stderr}")
    skipped = run("import", "--file", bad, "--database", target)
    check(skipped.returncode == 0 and "skipped 1 field" in skipped.stderr and "alerts[0].surprise" in skipped.stderr,
          f"an unknown field (a newer exporter's) was not skipped and listed: {skipped.stdout}{skipped.stderr}")
    print(f"exchange: export -> import (standard input, then again) -> export identical ("
          f"{len(moved.get('push_registrations', []))} registrations, {len(moved.get('alerts', []))} alert); dry run wrote nothing; "
          "an unknown field skipped and listed with its path (refused with --strict)")


def demo():
    database = os.path.join(WORK, "demo.sqlite3")
    sidecar = base.Sidecar(database, "--demo", "--alarm-check-interval", "5", "--live-activity-interval", "5")
    try:
        status, body = sidecar.request("GET", "/demo")
        check(status == 200, f"/demo answered {status}")
        guide = body.decode()
        commands = [command.replace("\\\n", " ") for command in re.findall(r"^  (curl -X POST .*?)(?=\n\n|\Z)", guide, re.M | re.S)]
        check(len(commands) == 2, f"the guide has no alarm and Live Activity commands:\n{guide}")
        for command in commands:
            done = subprocess.run(["bash", "-c", command + " -s -o /dev/null -w '%{http_code}'"], capture_output=True, text=True, timeout=30)
            check(done.stdout.strip() in ("200", "201", "204"), f"{command} answered {done.stdout} {done.stderr}")
        started = time.time()
        base.wait_for(lambda: "push (log transport)" in sidecar.text() and "kind=alert" in sidecar.text(), 30, f"no alarm fired:\n{sidecar.text()}")
        fired = time.time() - started
        base.wait_for(lambda: "kind=liveactivity" in sidecar.text() and "content_state=" in sidecar.text(), 30,
                      f"no Live Activity update:\n{sidecar.text()}")
        feed = sidecar.request("GET", "/api/v1/regions/9999/alerts.pbtext")[1].decode()
        check("Route 2X detoured" in feed, "the demo feed has no sample alert")
    finally:
        check(sidecar.stop() == 0, "the demo server did not stop cleanly")
    print(f"demo: the guide's two curl commands, run as printed, made the alarm fire in the log {fired:.1f} s later "
          "(5 s checks) and a Live Activity update with its content state")


def probe():
    database = os.path.join(WORK, "probe.sqlite3")
    sidecar = base.Sidecar(database, "--demo")
    try:
        guide = sidecar.request("GET", "/demo")[1].decode()
        fields = dict(re.findall(r"-d (stop_id|trip_id|service_date|stop_sequence|vehicle_id)=(\S+)", guide))
        done = subprocess.run([BIN, "probe", f"http://127.0.0.1:{sidecar.port}", "--region", "9999", "--stop-id", fields["stop_id"],
                               "--trip-id", fields["trip_id"], "--service-date", fields["service_date"], "--stop-sequence", fields["stop_sequence"],
                               "--vehicle-id", fields["vehicle_id"]], capture_output=True, text=True, timeout=60)
        check(done.returncode == 0 and "every check passed" in done.stdout, f"probe failed:\n{done.stdout}{done.stderr}")
        check("  PASS  alarm" in done.stdout, f"the alarm was not checked:\n{done.stdout}")
    finally:
        check(sidecar.stop() == 0, "the probed server did not stop cleanly")
    connection = sqlite3.connect(database)
    left = [connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in ("push_registrations", "alarms", "live_activities")]
    connection.close()
    check(left == [0, 0, 0], f"the probe left rows behind: {left}")
    print(f"probe: `sidecar probe` against the binary passed {done.stdout.count('PASS')} checks (a real alarm included) and left nothing behind")

    # A server that accepts connections and never answers: every check fails
    # after --timeout, instead of holding the probe for minutes.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held = []

    def accept_and_hold():
        try:
            while True:
                held.append(listener.accept()[0])
        except OSError:
            pass  # closed below

    threading.Thread(target=accept_and_hold, daemon=True).start()
    started = time.monotonic()
    silent = subprocess.run([BIN, "probe", f"http://127.0.0.1:{listener.getsockname()[1]}", "--region", "1", "--timeout", "1"],
                            capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    listener.close()
    timed_out = [line for line in silent.stdout.splitlines() if line.startswith("  FAIL") and line.endswith("no answer: timed out")]
    check(silent.returncode == 1 and len(timed_out) == 6, f"a silent server was not reported as timing out:\n{silent.stdout}{silent.stderr}")
    check(elapsed < 30, f"the probe took {elapsed:.1f} s against a silent server with --timeout 1")
    print(f"probe: against a server that never answers, --timeout 1 failed all 6 checks as 'timed out' in {elapsed:.1f} s")


def main():
    for name in CHECKS:
        {"metrics": metrics, "logs": logs, "backup": backup, "doctor": doctor, "exchange": exchange, "demo": demo, "probe": probe}[name]()


if __name__ == "__main__":
    main()

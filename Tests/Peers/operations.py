#!/usr/bin/env python3
"""What an operator does with the real binary, checked with other people's tools.

    operations.py BIN [check ...]

  metrics   /metrics on --metrics-listen read by prometheus_client's parser;
            counts after a known sequence of requests
  logs      --log-format json at debug: every line one JSON object, no secret
"""
import json
import os
import socket
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402  (the stand-ins and the process wrapper)
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
CHECKS = sys.argv[2:] or ["metrics", "logs"]
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
        statuses = [register(sidecar, f"token-{n}") for n in range(3)] + [register(sidecar, "droid", "android")]
        statuses.append(sidecar.request("POST", "/api/v2/regions/1/push_registrations", "token=x", {"Content-Type": "application/x-www-form-urlencoded"})[0])
        statuses.append(sidecar.request("GET", "/healthz")[0])
        statuses.append(sidecar.request("GET", "/nothing/here")[0])
        check(statuses == [204, 204, 204, 204, 422, 200, 404], f"unexpected statuses {statuses}")
        port = metrics_port(sidecar)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
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


def main():
    for name in CHECKS:
        {"metrics": metrics, "logs": logs}[name]()


if __name__ == "__main__":
    main()

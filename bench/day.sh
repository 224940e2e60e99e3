#!/usr/bin/env bash
# A region's busiest hour, played at a chosen scale (issue 39): the sizing
# figure an agency can plan with.
#
#   bench/day.sh [devices ...]              # SQLite, one instance
#   BACKEND=postgres bench/day.sh [devices ...]   # PostgreSQL, two instances
#
# For each scale (installed apps in the region; 100000 by default): the
# devices' registrations, 1% of them following a bus in a Live Activity, a
# survey and its study are stored first; then for WINDOW seconds (240) the
# rider traffic of the busiest hour (bench/day.py states the mix) arrives at
# its own rate, the server pushes each Live Activity every minute and fires
# each alarm, and at ALERT_AT seconds (60) one alert is pushed to every device
# through the admin API. Alarms are set during the first WINDOW - 120 seconds
# and the run waits for the last of them to fire.
#
# Stand-ins: nginx as OneBusAway (every stop's arrivals and every trip's
# arrival from files) and nginx as APNs (HTTP/2 + TLS, logging each push with
# its time); their ceilings are measured first. A scale passes when every
# rider-facing request kind has p99 under 100 ms and no error, every alarm
# reached APNs within 60 s of its due time (the checker fires at the last
# check before it is due, so early by up to one interval), and every Live Activity cycle
# ended within its minute. SIDECAR_BIN measures a binary built elsewhere;
# DAY_RESULTS names the results table's file, DAY_LOGS a prefix under which
# each scale's sidecar log, load report and APNs stand-in log are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source script/postgres
source bench/lib.sh
BACKEND="${BACKEND:-sqlite}"
PACKAGES=(nghttp2-client libnginx-mod-http-echo openssl python3 nginx wrk sqlite3)
[ "$BACKEND" = postgres ] && PACKAGES+=(postgresql)
sidecar_install_packages "${PACKAGES[@]}"

SCALES=("${@:-100000}")
WINDOW="${WINDOW:-240}"
ALERT_AT="${ALERT_AT:-60}"
STOPS="${STOPS:-2000}"
OBA_PORT=18231
APNS_PORT=18232
PORTS=(18233 18234)
PG_PORT=18235
WORK="$(mktemp -d)"
chmod 755 "$WORK"  # initdb runs as the postgres user and must reach $WORK/pg
trap 'kill $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; sidecar_postgres_stop "$WORK/pg"; rm -rf "$WORK"' EXIT
bench_binary
RESULTS="${DAY_RESULTS:-$WORK/results.md}"

# The stand-ins, once for every scale. Trips leave each stop every minute
# from now on, at a second of the minute that varies by stop and trip (so
# alarms fall due at every phase of the checker's interval); any alarm set
# during the run has a trip 11-13 minutes ahead.
TRIPS_START_MS=$(( $(date +%s) * 1000 ))
SERVICE_DATE=1767168000000
TRIPS=$(( (WINDOW + 120) / 60 + 30 ))
mkdir -p "$WORK/oba/api/where/arrivals-and-departures-for-stop" "$WORK/oba/single"
python3 - "$WORK/oba" "$STOPS" "$TRIPS" "$TRIPS_START_MS" "$SERVICE_DATE" <<'PY'
import json, sys
directory, stops, trips, start, service_date = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def entry(stop, k):
    when = start + k * 60_000 + ((stop * 7919 + k * 104729) % 60) * 1000
    return {"stopId": f"s_{stop}", "tripId": f"t_{stop}_{k}", "routeId": "1_1", "routeShortName": "44",
            "tripHeadsign": "Ballard", "serviceDate": service_date, "stopSequence": 4, "vehicleId": f"v_{k}",
            "predicted": True, "predictedDepartureTime": when, "scheduledDepartureTime": when,
            "predictedArrivalTime": when, "scheduledArrivalTime": when, "lastUpdateTime": when - 60_000}
def envelope(body):
    return {"code": 200, "currentTime": 0, "text": "OK", "version": 2,
            "data": {"entry": body, "references": {"routes": [{"id": "1_1", "shortName": "44"}]}}}
for stop in range(stops):
    with open(f"{directory}/api/where/arrivals-and-departures-for-stop/s_{stop}.json", "w") as file:
        json.dump(envelope({"stopId": f"s_{stop}", "arrivalsAndDepartures": [entry(stop, k) for k in range(trips)]}), file)
    for k in range(trips):
        with open(f"{directory}/single/t_{stop}_{k}.json", "w") as file:
            json.dump(envelope(entry(stop, k)), file)
PY
# The answers' currentTime is the stand-in's clock at each request (the
# checker reads times against it): a placeholder replaced with nginx's $msec.
start_nginx "$WORK" "$OBA_PORT" "access_log $WORK/oba-access.log;
    sub_filter_types application/json; sub_filter '\"currentTime\": 0' '\"currentTime\": \$now_ms';
    location /api/where/arrivals-and-departures-for-stop/ { root $WORK/oba; default_type application/json; }
    location /api/where/arrival-and-departure-for-stop/ { root $WORK/oba; default_type application/json; try_files /single/\$arg_tripId.json =404; }"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null
start_nginx_apns "$WORK" "$APNS_PORT" "$WORK/server.pem" "$WORK/server.key" 1 "$WORK/apns-access.log"
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$OBA_PORT/api/where/arrivals-and-departures-for-stop/s_0.json" && break; sleep 0.1; done

# The stand-ins' own ceilings, measured before they are used.
OBA_CEILING=$(wrk -t2 -c32 -d5s "http://127.0.0.1:$OBA_PORT/api/where/arrivals-and-departures-for-stop/s_1.json" | awk '/^Requests\/sec/ {printf "%.0f", $2}')
echo '{"aps":{"alert":{"title":"Route 44 detoured","body":"Buses skip NW 45th St."},"sound":"default"}}' > "$WORK/push.json"
APNS_CEILING=$(h2load -n 100000 -c 4 -m 50 -d "$WORK/push.json" "https://127.0.0.1:$APNS_PORT/3/device/ceiling" 2>&1 \
  | awk '/^finished in/ {gsub(",", "", $4); printf "%.0f", $4}')
: > "$WORK/oba-access.log"; : > "$WORK/apns-access.log"
nginx -c "$WORK/apns-nginx.conf" -s reopen 2>/dev/null; nginx -c "$WORK/nginx.conf" -s reopen 2>/dev/null

cat > "$WORK/regions.json" <<JSON
{"data": {"list": [{"id": 1, "regionName": "Bench", "obaBaseUrl": "http://127.0.0.1:$OBA_PORT/", "sidecarBaseUrl": null}]}}
JSON
INSTANCES=1
if [ "$BACKEND" = postgres ]; then
  INSTANCES=2
  sidecar_postgres_start "$WORK/pg" "$PG_PORT"
fi

cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

{
  echo "Machine: $(nproc) cores, $(uname -sr); backend $BACKEND with $INSTANCES instance(s); $STOPS stops; window ${WINDOW} s, alert to everyone at ${ALERT_AT} s; $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "Stand-ins measured first: OneBusAway (nginx, files) $OBA_CEILING requests/s; APNs (nginx, HTTP/2 + TLS) $APNS_CEILING pushes/s."
  echo
  echo "| devices | feed p99 | surveys p99 | register p99 | alarm p99 | answer p99 | errors | alarms outside their minute / set | alarms reached APNs, from due | LA cycles (max) | alert to all | sidecar CPU | passes |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$RESULTS"

for DEVICES in "${SCALES[@]}"; do
  DB="$WORK/day.sqlite3"
  rm -f "$DB" "$DB"-*
  "$BIN" migrate --database "$DB" >/dev/null 2>&1
  python3 - "$DB" "$DEVICES" "$STOPS" <<'PY'
import sqlite3, sys, time, secrets
path, devices, stops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
now_ms, now = int(time.time() * 1000), int(time.time())
db = sqlite3.connect(path)
db.executemany("""INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device,
    description, created_at, last_seen_at) VALUES (1, ?, 'ios', ?, NULL, 0, 0, NULL, ?, ?)""",
    ((f"{i:064x}", "es" if i % 4 == 0 else None, now_ms, now_ms) for i in range(devices)))
db.executemany("""INSERT INTO live_activities (token, region_id, activity_id, push_token, stop_id, route_short_name, trip_headsign,
    apns_sandbox, expires_at, created_at) VALUES (?, 1, ?, ?, ?, '44', 'Ballard', 0, ?, ?)""",
    ((secrets.token_urlsafe(16), f"activity-{i}", f"f{i:063x}", f"s_{i % stops}", now + 8 * 3600, now) for i in range(devices // 100)))
db.commit()
PY
  STUDY=$("$BIN" study create --region 1 --name "Riders" --database "$DB" 2>/dev/null | grep -oE '[0-9]+' | head -1)
  cat > "$WORK/survey.json" <<JSON
{"region_id": 1, "study_id": $STUDY, "name": "Is your stop sheltered?", "available": true, "start_date": "2026-01-01T00:00:00Z", "end_date": "2030-01-01T00:00:00Z",
 "questions": [{"position": 1, "required": true, "content": {"type": "radio", "label_text": "Is there a shelter?", "options": ["Yes", "No"]}}]}
JSON
  SURVEY=$("$BIN" survey create --file "$WORK/survey.json" --database "$DB" 2>/dev/null | grep -oE '[0-9]+' | head -1)
  QUESTION=$("$BIN" survey show "$SURVEY" --database "$DB" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["questions"][0]["id"])')
  KEY=$("$BIN" apikey create --name "day bench" --region 1 --push --database "$DB" 2>/dev/null | tail -1)
  TARGET_DB="$DB"
  if [ "$BACKEND" = postgres ]; then
    ADMIN="$(sidecar_postgres_url "$PG_PORT")"
    psql "$ADMIN" -q -c "DROP DATABASE IF EXISTS day" -c "CREATE DATABASE day"
    TARGET_DB="${ADMIN%/*}/day"
    "$BIN" copy-database --from "$DB" --to "$TARGET_DB" >/dev/null 2>&1
  fi

  : > "$WORK/apns-access.log"; : > "$WORK/oba-access.log"
  TARGETS=""
  for ((i = 0; i < INSTANCES; i++)); do
    "$BIN" serve --host 127.0.0.1 --port "${PORTS[$i]}" --database "$TARGET_DB" --regions "$WORK/regions.json" \
      --live-activity-interval 60 --alarm-check-interval 60 \
      --push-transport direct --apns-key-file "$WORK/apns.p8" --apns-key-id KEYID12345 --apns-team-id TEAMID1234 \
      --apns-url "https://127.0.0.1:$APNS_PORT" --apns-ca-file "$WORK/server.pem" --log-level info > "$WORK/sidecar$i.log" 2>&1 &
    echo $! > "$WORK/sidecar$i.pid"
    for _ in $(seq 300); do curl -fs -o /dev/null "http://127.0.0.1:${PORTS[$i]}/healthz" && break; sleep 0.1; done
    TARGETS="$TARGETS${TARGETS:+,}127.0.0.1:${PORTS[$i]}"
  done
  CPU0=0; for ((i = 0; i < INSTANCES; i++)); do CPU0=$((CPU0 + $(cpu_of "$(cat "$WORK/sidecar$i.pid")"))); done

  python3 bench/day.py "{\"targets\": \"$TARGETS\", \"devices\": $DEVICES, \"window\": $WINDOW, \"alarm_window\": $((WINDOW - 120)),
    \"alert_at\": $ALERT_AT, \"stops\": $STOPS, \"trips_start_ms\": $TRIPS_START_MS, \"service_date\": $SERVICE_DATE,
    \"survey_id\": $SURVEY, \"question_id\": $QUESTION, \"admin_key\": \"$KEY\", \"out\": \"$WORK/day.json\"}"
  # The last alarms are due up to two minutes after they were set: wait for
  # each to reach APNs (or for its minute to pass with some missing).
  python3 - "$WORK/day.json" "$WORK/apns-access.log" <<'PY'
import json, sys, time
report = json.load(open(sys.argv[1]))
tokens = {a["token"] for a in report["alarms"]}
deadline = max([a["due_ms"] / 1000 + 75 for a in report["alarms"]] + [time.time()])
while time.time() < deadline:
    seen = {line.split()[1].rsplit("/", 1)[-1] for line in open(sys.argv[2]) if line.rstrip().endswith(" alarm")}
    if tokens <= seen:
        break
    time.sleep(1)
PY
  sleep 1.5  # nginx flushes its log each second
  CPU1=0; for ((i = 0; i < INSTANCES; i++)); do CPU1=$((CPU1 + $(cpu_of "$(cat "$WORK/sidecar$i.pid")"))); done
  for ((i = 0; i < INSTANCES; i++)); do kill -TERM "$(cat "$WORK/sidecar$i.pid")"; wait "$(cat "$WORK/sidecar$i.pid")" 2>/dev/null || true; rm -f "$WORK/sidecar$i.pid"; done
  cat "$WORK"/sidecar[0-9].log > "$WORK/instances.log"
  [ -n "${DAY_LOGS:-}" ] && cp "$WORK/instances.log" "$DAY_LOGS.$DEVICES.log" && cp "$WORK/day.json" "$DAY_LOGS.$DEVICES.json" \
    && cp "$WORK/apns-access.log" "$DAY_LOGS.$DEVICES.apns.log"

  python3 - "$WORK/day.json" "$WORK/apns-access.log" "$WORK/instances.log" "$DEVICES" "$(( CPU1 - CPU0 ))" >> "$RESULTS" <<'PY'
import json, re, sys
report, devices, cpu = json.load(open(sys.argv[1])), int(sys.argv[4]), int(sys.argv[5]) / 100
fired = {}
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) >= 4 and parts[3] == "alarm" and parts[2] == "200":
        fired.setdefault(parts[1].rsplit("/", 1)[-1], float(parts[0]))
lateness = [fired[a["token"]] - a["due_ms"] / 1000 if a["token"] in fired else None for a in report["alarms"]]
missing = sum(1 for late in lateness if late is None)
late = sum(1 for v in lateness if v is not None and abs(v) > 60) + missing
fired_at = [v for v in lateness if v is not None]
span = f"{min(fired_at):+.0f} to {max(fired_at):+.0f} s" if fired_at else "–"
cycles = [int(m.group(1)) for m in re.finditer(r"live activity cycle .*duration_ms=(\d+)", open(sys.argv[3]).read())]
kinds = report["kinds"]
errors = sum(k["errors"] for k in kinds.values())
p99 = [kinds[k]["p99_ms"] for k in ("alerts feed", "surveys", "register", "alarm", "survey answer")]
send = report.get("send", {})
result = send.get("result", {})
sent = f"{send['duration_s']} s ({result.get('delivered', '?')} delivered)" if "duration_s" in send else "not finished"
passes = (errors == 0 and all(v is not None and v < 100 for v in p99) and late == 0
          and all(c < 60_000 for c in cycles) and "duration_s" in send)
cell = lambda v: "–" if v is None else f"{v:.0f} ms" if v >= 10 else f"{v:.1f} ms"
print(f"| {devices:,} | " + " | ".join(cell(v) for v in p99) + f" | {errors} | {late} / {len(report['alarms'])} | "
      f"{span} | {len(cycles)} ({max(cycles, default=0) / 1000:.1f} s) | {sent} | {cpu:.0f} s | {'yes' if passes else 'no'} |")
if report["statuses"]:
    print(f"<!-- {devices}: {report['statuses']} -->")
PY
  tail -1 "$RESULTS" >&2
done
cat "$RESULTS"

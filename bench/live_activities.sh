#!/usr/bin/env bash
# Live Activity benchmark (issues 7 and 29). Subscriptions over stops; a
# OneBusAway stand-in; pushes straight to an APNs stand-in over HTTP/2 + TLS
# (nghttpd, reading every body). Reports one cycle: upstream requests (target:
# the number of distinct stops), wall time, pushes/s, sidecar CPU and RSS.
#
#   bench/live_activities.sh [subscriptions] [stops]
#
# OBA_STANDIN=nginx (the default) serves each stop's arrivals precomputed
# from files through nginx, fast enough not to be the limit (issue 29);
# OBA_STANDIN=python is bench/fake_oba.py, 20 ms a request (issue 7's run).
# TRIP_SPREAD_MINUTES (nginx only, 180 by default as fake_oba.py): the stop's
# 10 trips depart over that many minutes; 30 puts one within every rider's
# window, so every subscription is pushed (the worst case).
# APNS_STANDIN=nginx (the default; bench/lib.sh's start_nginx_apns) or
# nghttpd, whose ceiling was the limit before (bench/apns_standin.sh measures
# both); APNS_WORKERS (1 by default): the stand-in's workers. SIDECAR_BIN
# measures a binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" nghttp2-server libnginx-mod-http-echo openssl python3 nginx

SUBSCRIPTIONS="${1:-100000}"
STOPS="${2:-5000}"
OBA_PORT=18211
APNS_PORT=18212
bench_workspace
bench_binary
APNS_WORKERS="${APNS_WORKERS:-1}"

STANDIN="${OBA_STANDIN:-nginx}"
if [ "$STANDIN" = python ]; then
  TRIPS_PER_STOP=10 LATENCY_MS=20 python3 bench/fake_oba.py $OBA_PORT & echo $! > "$WORK/oba.pid"
  STANDIN_TEXT="fake OBA (Python) 20 ms"
else
  # Each stop's answer written once, as bench/fake_oba.py would give it now
  # (10 trips spread over three hours; those within the next 35 minutes).
  mkdir -p "$WORK/oba/api/where/arrivals-and-departures-for-stop"
  python3 - "$WORK/oba/api/where/arrivals-and-departures-for-stop" "$STOPS" "${TRIP_SPREAD_MINUTES:-180}" <<'PY'
import json, sys, time
directory, stops, spread, trips = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), 10
now = int(time.time() * 1000)
for stop in range(stops):
    items = []
    for k in range(trips):
        when = now + (5 + (stop * trips + k) % spread) * 60_000
        if when <= now + 35 * 60_000:
            items.append({"stopId": f"s_{stop}", "tripId": f"t_{stop}_{k}", "routeId": "1_1", "routeShortName": "44",
                          "tripHeadsign": "Ballard", "serviceDate": 1767168000000, "stopSequence": 4, "vehicleId": f"v_{k}",
                          "predicted": True, "predictedDepartureTime": when, "scheduledDepartureTime": when,
                          "predictedArrivalTime": when, "scheduledArrivalTime": when, "lastUpdateTime": when - 60_000})
    body = {"code": 200, "currentTime": now, "text": "OK", "version": 2,
            "data": {"entry": {"stopId": f"s_{stop}", "arrivalsAndDepartures": items},
                     "references": {"routes": [{"id": "1_1", "shortName": "44"}]}}}
    with open(f"{directory}/s_{stop}.json", "w") as file:
        json.dump(body, file)
PY
  start_nginx "$WORK" "$OBA_PORT" "location /api/where/ { root $WORK/oba; default_type application/json; access_log $WORK/oba-access.log; }"
  STANDIN_TEXT="OneBusAway stand-in: nginx serving each stop's answer from a file"
fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null
mkdir -p "$WORK/htdocs"
APNS_STANDIN="${APNS_STANDIN:-nginx}"
if [ "$APNS_STANDIN" = nginx ]; then
  start_nginx_apns "$WORK" "$APNS_PORT" "$WORK/server.pem" "$WORK/server.key" "$APNS_WORKERS"
else
  nghttpd -n "$APNS_WORKERS" --echo-upload -d "$WORK/htdocs" "$APNS_PORT" "$WORK/server.key" "$WORK/server.pem" > /dev/null 2>&1 & echo $! > "$WORK/nghttpd.pid"
fi
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$OBA_PORT/api/where/arrivals-and-departures-for-stop/s_0.json" && break; sleep 0.1; done
[ -f "$WORK/oba-access.log" ] && : > "$WORK/oba-access.log"

cat > "$WORK/regions.json" <<JSON
{"data": {"list": [{"id": 1, "regionName": "Bench", "obaBaseUrl": "http://127.0.0.1:$OBA_PORT/", "sidecarBaseUrl": null}]}}
JSON
"$BIN" migrate --database "$WORK/bench.sqlite3" >/dev/null
python3 - "$WORK/bench.sqlite3" "$SUBSCRIPTIONS" "$STOPS" <<'PY'
import sqlite3, sys, time, secrets
path, count, stops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
now = int(time.time())
db = sqlite3.connect(path)
db.executemany("""INSERT INTO live_activities (token, region_id, activity_id, push_token, stop_id, route_short_name, trip_headsign,
    apns_sandbox, expires_at, created_at) VALUES (?, 1, ?, ?, ?, '44', 'Ballard', 0, ?, ?)""",
    [(secrets.token_urlsafe(16), f"activity-{i}", f"{i:064x}", f"s_{i % stops}", now + 8 * 3600, now) for i in range(count)])
db.commit()
PY

"$BIN" serve --host 127.0.0.1 --port 0 --database "$WORK/bench.sqlite3" --regions "$WORK/regions.json" --live-activity-interval 600 \
  --push-transport direct --apns-key-file "$WORK/apns.p8" --apns-key-id KEYID12345 --apns-team-id TEAMID1234 \
  --apns-url "https://127.0.0.1:$APNS_PORT" --apns-ca-file "$WORK/server.pem" --log-level info > "$WORK/sidecar.log" 2>&1 &
echo $! > "$WORK/sidecar.pid"
PID=$(cat "$WORK/sidecar.pid")
CPU0=$(awk '{print $14 + $15}' "/proc/$PID/stat")
# LA_PROFILE=FILE: perf samples of the sidecar during the cycle, top entries in FILE.
if [ -n "${LA_PROFILE:-}" ]; then
  command -v perf >/dev/null || sidecar_install_packages linux-perf
  perf record -F 499 -g -p "$PID" -o "$WORK/perf.data" > /dev/null 2>&1 & echo $! > "$WORK/perf.pid"
fi
for _ in $(seq 3000); do grep -q "live activity cycle" "$WORK/sidecar.log" && break; sleep 0.1; done
grep -q "live activity cycle" "$WORK/sidecar.log" || { tail -20 "$WORK/sidecar.log" >&2; exit 1; }
CPU1=$(awk '{print $14 + $15}' "/proc/$PID/stat")
if [ -n "${LA_PROFILE:-}" ]; then
  kill -INT "$(cat "$WORK/perf.pid")"; wait "$(cat "$WORK/perf.pid")" 2>/dev/null || true; rm -f "$WORK/perf.pid"
  perf report -i "$WORK/perf.data" --stdio --no-children --sort symbol -g none > "$WORK/perf.txt" 2>/dev/null || true
  awk '/%/ && !/^#/ && n++ < 40' "$WORK/perf.txt" > "$LA_PROFILE"
  perf report -i "$WORK/perf.data" --stdio --no-children --sort dso,symbol -G > "$LA_PROFILE.callers" 2>/dev/null || true
fi
HWM=$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status")
LINE=$(grep "live activity cycle" "$WORK/sidecar.log" | head -1)
field() { echo "$LINE" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {print $2}'; }
DURATION=$(field duration_ms)
UPDATES=$(field updates)
if [ "$STANDIN" = python ]; then
  STATS=$(curl -s "http://127.0.0.1:$OBA_PORT/stats")
else
  STATS="$(grep -c 'arrivals-and-departures-for-stop' "$WORK/oba-access.log") stop requests in nginx's log"
fi

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $SUBSCRIPTIONS subscriptions over $STOPS stops; $STANDIN_TEXT; APNs stand-in $APNS_STANDIN over HTTP/2 + TLS with $APNS_WORKERS worker(s); $(date -u +%Y-%m-%dT%H:%MZ)

| subscriptions | stop requests | wall time | pushes | pushes/s | sidecar CPU | peak RSS |
|---|---|---|---|---|---|---|
| $(field subscriptions) | $(field stop_requests) (fake server saw $STATS) | $DURATION ms | $UPDATES | $(awk -v n="$UPDATES" -v t="$DURATION" 'BEGIN { printf "%.0f", n / (t / 1000) }') | $(awk -v t=$((CPU1 - CPU0)) 'BEGIN { printf "%.2f", t / 100 }') s | $HWM MB |
REPORT
# LA_LOG=FILE keeps the sidecar's log of the run.
if [ -n "${LA_LOG:-}" ]; then cp "$WORK/sidecar.log" "$LA_LOG"; fi

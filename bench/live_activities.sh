#!/usr/bin/env bash
# Live Activity benchmark (issue: Live Activities). 100,000 subscriptions over
# 5,000 stops; a fake OneBusAway server (20 ms per request); pushes straight
# to an APNs stand-in over HTTP/2 + TLS (nghttpd, reading every body). Reports
# one cycle: upstream requests (target: the number of distinct stops), wall
# time, pushes/s, sidecar CPU and RSS.
#
#   bench/live_activities.sh [subscriptions] [stops]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" nghttp2-server openssl python3

SUBSCRIPTIONS="${1:-100000}"
STOPS="${2:-5000}"
OBA_PORT=18211
APNS_PORT=18212
bench_workspace
build_release

TRIPS_PER_STOP=10 LATENCY_MS=20 python3 bench/fake_oba.py $OBA_PORT & echo $! > "$WORK/oba.pid"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null
mkdir -p "$WORK/htdocs"
nghttpd --echo-upload -d "$WORK/htdocs" "$APNS_PORT" "$WORK/server.key" "$WORK/server.pem" > /dev/null 2>&1 & echo $! > "$WORK/nghttpd.pid"
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$OBA_PORT/stats" >/dev/null && break; sleep 0.1; done

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
for _ in $(seq 1200); do grep -q "live activity cycle" "$WORK/sidecar.log" && break; sleep 0.1; done
grep -q "live activity cycle" "$WORK/sidecar.log" || { tail -20 "$WORK/sidecar.log" >&2; exit 1; }
CPU1=$(awk '{print $14 + $15}' "/proc/$PID/stat")
HWM=$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status")
LINE=$(grep "live activity cycle" "$WORK/sidecar.log" | head -1)
field() { echo "$LINE" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {print $2}'; }
DURATION=$(field duration_ms)
UPDATES=$(field updates)
STATS=$(curl -s "http://127.0.0.1:$OBA_PORT/stats")

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $SUBSCRIPTIONS subscriptions over $STOPS stops; fake OBA 20 ms; APNs stand-in nghttpd over HTTP/2 + TLS; $(date -u +%Y-%m-%dT%H:%MZ)

| subscriptions | stop requests | wall time | pushes | pushes/s | sidecar CPU | peak RSS |
|---|---|---|---|---|---|---|
| $(field subscriptions) | $(field stop_requests) (fake server saw $STATS) | $DURATION ms | $UPDATES | $(awk -v n="$UPDATES" -v t="$DURATION" 'BEGIN { printf "%.0f", n / (t / 1000) }') | $(awk -v t=$((CPU1 - CPU0)) 'BEGIN { printf "%.2f", t / 100 }') s | $HWM MB |
REPORT

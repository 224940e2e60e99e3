#!/usr/bin/env bash
# Alarm checker benchmark (issue: alarms). 100,000 pending alarms over 2,000
# stops, a fake OneBusAway server answering after 20 ms. Reports the first
# cycle (every alarm due) and the next one (steady state): wall time,
# upstream requests, sidecar CPU and RSS.
#
#   bench/alarms.sh [alarms] [stops]
#   ONE_TRIP=1 BEYOND_WINDOW=1 bench/alarms.sh 500 1   # 500 alarms on one trip the stop window misses
#   SIDECAR_BIN=path bench/alarms.sh ...              # measure another binary
#   CYCLE_WAIT=900 BEYOND_WINDOW=1 bench/alarms.sh 100000 2000  # 100,000 trips past the window: a long first cycle
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" sqlite3 python3 wrk curl

ALARMS="${1:-100000}"
STOPS="${2:-2000}"
PER_STOP=$(( ALARMS / STOPS ))
OBA_PORT=18201
SIDECAR_PORT=18202
INTERVAL=30
bench_workspace
bench_binary

TRIPS_PER_STOP=$PER_STOP LATENCY_MS=20 BEYOND_WINDOW="${BEYOND_WINDOW:-0}" python3 bench/fake_oba.py $OBA_PORT & echo $! > "$WORK/oba.pid"
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$OBA_PORT/stats" >/dev/null && break; sleep 0.1; done
# The stand-in's own ceiling at the checker's 32 lookups at once, measured
# before it is used (then its counts are zeroed).
OBA_CEILING=$(wrk -t1 -c32 -d5s "http://127.0.0.1:$OBA_PORT/api/where/arrival-and-departure-for-stop/s_0.json?tripId=t_0_0" \
  | awk '/^Requests\/sec/ {printf "%.0f", $2}')
curl -fs "http://127.0.0.1:$OBA_PORT/reset" > /dev/null

cat > "$WORK/regions.json" <<JSON
{"data": {"list": [{"id": 1, "regionName": "Bench", "obaBaseUrl": "http://127.0.0.1:$OBA_PORT/", "sidecarBaseUrl": null}]}}
JSON
"$BIN" migrate --database "$WORK/bench.sqlite3" >/dev/null
python3 - "$WORK/bench.sqlite3" "$ALARMS" "$STOPS" "$PER_STOP" "${ONE_TRIP:-0}" "${BEYOND_WINDOW:-0}" <<'PY'
import sqlite3, sys, time, secrets
path, alarms, stops, per_stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
one_trip, offset = sys.argv[5] == "1", 255 if sys.argv[6] == "1" else 5
now = int(time.time() * 1000)
db = sqlite3.connect(path)
rows = []
for i in range(alarms):
    stop, k = (0, 0) if one_trip else (i % stops, (i // stops) % per_stop)
    departure = now + (offset + (stop * per_stop + k) % 180) * 60_000
    rows.append((secrets.token_urlsafe(16), 1, 2, f"device-{i}", "ios" if i % 3 else "android", f"s_{stop}", f"t_{stop}_{k}",
                 1767168000000, f"v_{k}", 4, 600, "The 44 to Ballard leaves in 10 minutes", departure, 0, now))
db.executemany("""INSERT INTO alarms (token, region_id, api_version, user_push_id, operating_system, stop_id, trip_id, service_date,
    vehicle_id, stop_sequence, seconds_before, message, departure_estimate, next_check_at, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows)
db.commit()
PY

"$BIN" serve --host 127.0.0.1 --port $SIDECAR_PORT --database "$WORK/bench.sqlite3" --regions "$WORK/regions.json" \
  --alarm-check-interval $INTERVAL --push-transport none --log-level info > "$WORK/sidecar.log" 2>&1 &
echo $! > "$WORK/sidecar.pid"
PID=$(cat "$WORK/sidecar.pid")
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
kb() { awk -v key="$1" '$1 == key":" {print $2}' "/proc/$PID/status"; }

wait_cycle() {  # wait_cycle N: until the Nth "alarm cycle" line exists (CYCLE_WAIT seconds at most)
  for _ in $(seq $(( ${CYCLE_WAIT:-120} * 5 ))); do
    [ "$(grep -c 'alarm cycle' "$WORK/sidecar.log" || true)" -ge "$1" ] && return 0
    sleep 0.2
  done
  echo "no alarm cycle $1 in time" >&2; cat "$WORK/sidecar.log" >&2; exit 1
}
field() { sed -n "$1p" <(grep 'alarm cycle' "$WORK/sidecar.log") | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k {print $2}'; }

CPU0=$(cpu)
wait_cycle 1
CPU1=$(cpu); RSS1=$(kb VmRSS)
# Alarms past the stop window are all rescheduled ahead: no second cycle checks any.
CYCLES=2; { [ "${ONE_TRIP:-0}" = 1 ] || [ "${BEYOND_WINDOW:-0}" = 1 ]; } && CYCLES=1
[ "$CYCLES" = 2 ] && wait_cycle 2
CPU2=$(cpu); RSS2=$(kb VmRSS); HWM=$(kb VmHWM)
STATS=$(curl -s "http://127.0.0.1:$OBA_PORT/stats")

mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
secs() { awk -v t="$1" 'BEGIN { printf "%.2f", t / 100 }'; }
row() {  # row N label cpu_ticks rss_kb
  echo "| $2 | $(field "$1" checked) | $(field "$1" duration_ms) ms | $(field "$1" stop_requests) | $(field "$1" trip_requests) | $(secs "$3") s | $(mb "$4") MB |"
}
cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $ALARMS alarms over $STOPS stops ($PER_STOP per stop$([ "${ONE_TRIP:-0}" = 1 ] && echo ", all on one trip")$([ "${BEYOND_WINDOW:-0}" = 1 ] && echo ", departing past the stop window")), fake OBA latency 20 ms (its ceiling at 32 connections: $OBA_CEILING requests/s); $(date -u +%Y-%m-%dT%H:%MZ)

| cycle | alarms checked | wall time | stop requests | trip requests | sidecar CPU | RSS after |
|---|---|---|---|---|---|---|
$(row 1 "first (every alarm due)" $((CPU1 - CPU0)) "$RSS1")
$([ "$CYCLES" = 2 ] && row 2 "next, $INTERVAL s later" $((CPU2 - CPU1)) "$RSS2")

Upstream requests seen by the fake server over both cycles: $STATS. Peak RSS (VmHWM): $(mb "$HWM") MB.
REPORT

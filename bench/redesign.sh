#!/usr/bin/env bash
# Before and after a restructuring (issue 38): two binaries measured in
# interleaved rounds on the same machine, so drift hits both alike. Each
# round starts each binary on a fresh database and runs wrk -t2 -c64 for
# DURATION seconds against: POST push_registrations (unique tokens,
# throttle off), GET the alerts feed (one published alert), and GET an
# alert through the admin API with a key (the path whose checks moved).
# Prints a markdown table of medians: req/s, p50, p99 and CPU per request.
#
#   bench/redesign.sh BEFORE_BINARY AFTER_BINARY [rounds] [duration_seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages wrk curl

BEFORE="${1:?the binary before}"
AFTER="${2:?the binary after}"
ROUNDS="${3:-3}"
DURATION="${4:-10}"
PORT=18090
bench_workspace

# serve_with_alert NAME BINARY: a fresh database with region 1 set up, one
# published alert and an admin key (in WORK/key), served on PORT.
serve_with_alert() {
  local name="$1" binary="$2" db="$WORK/db.sqlite3"
  rm -f "$db"*
  "$binary" region set --id 1 --agency-id 1 --timezone UTC --agency-check false --database "$db" > /dev/null
  local alert
  alert=$("$binary" alert create --region 1 --header "Bench detour" --start 2026-01-01T00:00:00Z --end none --agency-check false \
    --database "$db" | grep -o 'alert [0-9]*' | head -n 1 | awk '{print $2}')
  "$binary" alert publish "$alert" --database "$db" > /dev/null
  "$binary" apikey create --name bench --region all --database "$db" | tail -n 1 > "$WORK/key"
  echo "$alert" > "$WORK/alert"
  "$binary" serve --host 127.0.0.1 --port "$PORT" --database "$db" --log-level warning --admin-api-limit 0 > "$WORK/server.log" 2>&1 &
  echo $! > "$WORK/server.pid"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
}

# get NAME PATH [header]: one wrk GET run against the server of serve_with_alert;
# appends "rps p50 p99 cpu_us" to WORK/NAME.
get() {
  local name="$1" path="$2" header="${3:-}" pid before after requests ticks
  pid=$(cat "$WORK/server.pid")
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  if [ -n "$header" ]; then
    wrk -t2 -c64 -d"${DURATION}s" --latency -H "$header" "http://127.0.0.1:$PORT$path" > "$WORK/wrk.out"
  else
    wrk -t2 -c64 -d"${DURATION}s" --latency "http://127.0.0.1:$PORT$path" > "$WORK/wrk.out"
  fi
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  if grep -q "Non-2xx" "$WORK/wrk.out"; then echo "$name: $(grep Non-2xx "$WORK/wrk.out")" >&2; exit 1; fi
  requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
  ticks=$(getconf CLK_TCK)
  echo "$(awk '/^Requests\/sec/ {print $2}' "$WORK/wrk.out") $(awk '$1 == "50%" {print $2}' "$WORK/wrk.out") \
    $(awk '$1 == "99%" {print $2}' "$WORK/wrk.out") \
    $(awk -v t=$((after - before)) -v r="$requests" -v k="$ticks" 'BEGIN { printf "%.1f", t / k / r * 1e6 }')" >> "$WORK/$name"
}

for round in $(seq "$ROUNDS"); do
  for side in before after; do
    binary="$BEFORE"; [ "$side" = after ] && binary="$AFTER"
    measure "$side-post" "$binary" --push-registration-limit 0
    serve_with_alert "$side" "$binary"
    get "$side-feed" "/api/v1/regions/1/alerts.pb"
    get "$side-admin" "/admin/api/alerts/$(cat "$WORK/alert")" "Authorization: Bearer $(cat "$WORK/key")"
    kill -TERM "$(cat "$WORK/server.pid")"; wait "$(cat "$WORK/server.pid")" 2>/dev/null || true
  done
  echo "round $round of $ROUNDS done" >&2
done

echo "| $ROUNDS interleaved rounds, medians | before req/s | after req/s | after/before | before p99 | after p99 | before CPU µs/req | after CPU µs/req |"
echo "|---|---|---|---|---|---|---|---|"
for what in post:"POST push_registrations" feed:"GET alerts.pb (one alert)" admin:"GET /admin/api/alerts/:alert"; do
  key="${what%%:*}" label="${what#*:}"
  read -r brps _ bp99 bcpu < <(median "$WORK/before-$key")
  read -r arps _ ap99 acpu < <(median "$WORK/after-$key")
  echo "| $label | $brps | $arps | $(awk -v a="$arps" -v b="$brps" 'BEGIN { printf "%.2f", a / b }') | $bp99 | $ap99 | $bcpu | $acpu |"
done

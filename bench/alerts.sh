#!/usr/bin/env bash
# Alerts benchmark (issue: service alerts).
#  1. Fan-out of one alert to 100,000 registrations through a gorush stand-in
#     (nginx answering POST /api/push with gorush's success body): wall time,
#     pushes/s, CPU and peak RSS of `sidecar alert send`.
#  2. GET alerts.pb served from the feed cache, against nginx serving a
#     static 204 in the same run: req/s (wrk -t2 -c64 -d10s).
#  3. The same feed asked conditionally (If-None-Match with its current
#     ETag): 304s against 200s, req/s and bytes on the wire.
#
#   bench/alerts.sh [registrations] [duration_seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" wrk nginx-light python3 time

REGISTRATIONS="${1:-100000}"
DURATION="${2:-10}"
NGINX_PORT=18401
SIDECAR_PORT=18402
bench_workspace
build_release
DB="$WORK/bench.sqlite3"

start_nginx "$WORK" "$NGINX_PORT" "location = /api/push { default_type application/json; return 200 '{\"counts\":0,\"logs\":[],\"success\":\"ok\"}'; }"

"$BIN" region set --id 1 --agency-id 1 --database "$DB" >/dev/null
python3 - "$DB" "$REGISTRATIONS" <<'PY'
import sqlite3, sys, time
path, count = sys.argv[1], int(sys.argv[2])
now = int(time.time() * 1000)
locales = [("es", "es-MX"), (None, "en-US"), ("zh-Hant", "zh-TW"), ("vi", "vi-VN"), (None, None)]
db = sqlite3.connect(path)
db.executemany("""INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device,
    description, created_at, last_seen_at) VALUES (1, ?, ?, ?, ?, ?, 0, NULL, ?, ?)""",
    [(f"{i:064x}", "android" if i % 3 == 0 else "ios", locales[i % 5][0], locales[i % 5][1], 1 if i % 50 == 0 else 0, now, now)
     for i in range(count)])
db.commit()
PY
ID=$("$BIN" alert create --region 1 --header "Route 44 detoured this weekend between Ballard and the U District" \
  --description "Buses skip NW 45th St; use stops on NW Market St." --cause CONSTRUCTION --effect DETOUR --severity WARNING \
  --start "$(bench_time 0)" --database "$DB" | awk '{print $3}')
"$BIN" alert translate "$ID" --language es --header "Ruta 44 desviada" --description "Use las paradas de NW Market St." --database "$DB" >/dev/null
bench_published "$ID" "$DB"
for i in $(seq 2 20); do
  N=$("$BIN" alert create --region 1 --header "Alert $i" --start "$(bench_time $((-i)))" --database "$DB" 2>/dev/null | awk '{print $3}')
  bench_published "$N" "$DB"
done

START=$(date +%s.%N)
/usr/bin/time -v "$BIN" alert send "$ID" --gorush-url "http://127.0.0.1:$NGINX_PORT" --database "$DB" \
  > "$WORK/send.out" 2> "$WORK/send.err"
END=$(date +%s.%N)
WALL=$(awk -v a="$START" -v b="$END" 'BEGIN { printf "%.2f", b - a }')
RESULT=$(tail -1 "$WORK/send.out")
CPU=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u + s}' "$WORK/send.err")
PEAK=$(awk -F': ' '/Maximum resident/ {printf "%.1f", $2 / 1024}' "$WORK/send.err")
RATE=$(awk -v n="$REGISTRATIONS" -v t="$WALL" 'BEGIN { printf "%.0f", n / t }')

"$BIN" serve --host 127.0.0.1 --port $SIDECAR_PORT --database "$DB" --log-level warning > "$WORK/sidecar.log" 2>&1 &
echo $! > "$WORK/sidecar.pid"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$SIDECAR_PORT/healthz" >/dev/null && break; sleep 0.1; done
FEED_BYTES=$(curl -s "http://127.0.0.1:$SIDECAR_PORT/api/v1/regions/1/alerts.pb" | wc -c)

rps() { wrk -t2 -c64 -d"${DURATION}s" --latency "$@" | awk '/^Requests\/sec/ {r=$2} /^Transfer\/sec/ {t=$2} $1 == "99%" {p=$2} END {print r, p, t}'; }
read -r NGINX_RPS NGINX_P99 _ <<<"$(rps "http://127.0.0.1:$NGINX_PORT/")"
read -r FEED_RPS FEED_P99 FEED_TRANSFER <<<"$(rps "http://127.0.0.1:$SIDECAR_PORT/api/v1/regions/1/alerts.pb")"
# Conditional: the tag of this minute's feed (a new minute re-stamps it, so
# the run stays inside one minute's tag or it is measured again).
FEED_URL="http://127.0.0.1:$SIDECAR_PORT/api/v1/regions/1/alerts.pb"
for _ in 1 2; do
  ETAG=$(curl -sI "$FEED_URL" | awk -F': ' 'tolower($1) == "etag" {gsub(/\r/, "", $2); print $2}')
  NOT_MODIFIED_BYTES=$(curl -s -o /dev/null -w '%{size_header}+%{size_download}' -H "If-None-Match: $ETAG" "$FEED_URL")
  OK_BYTES=$(curl -s -o /dev/null -w '%{size_header}+%{size_download}' "$FEED_URL")
  read -r NM_RPS NM_P99 NM_TRANSFER <<<"$(rps -H "If-None-Match: $ETAG" "$FEED_URL")"
  STATUS=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $ETAG" "$FEED_URL")
  [ "$STATUS" = 304 ] && break
done
RSS=$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$(cat "$WORK/sidecar.pid")/status")

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)

Fan-out of one alert to $REGISTRATIONS registrations (5 locale groups x 2 platforms, 2% sandbox) through a gorush stand-in:

| wall time | pushes/s | CPU (user+sys) | peak RSS | result |
|---|---|---|---|---|
| $WALL s | $RATE | $CPU s | $PEAK MB | $RESULT |

GET /api/v1/regions/1/alerts.pb from the cache ($FEED_BYTES bytes, 20 alerts), wrk -t2 -c64 -d${DURATION}s:

| target | req/s | vs nginx | p99 |
|---|---|---|---|
| nginx static 204 (ceiling) | $NGINX_RPS | 1.00 | $NGINX_P99 |
| alerts.pb | $FEED_RPS | $(awk -v a="$FEED_RPS" -v b="$NGINX_RPS" 'BEGIN { printf "%.2f", a / b }') | $FEED_P99 |

Sidecar peak RSS during the feed run: $RSS MB.

The same feed asked conditionally (If-None-Match with its current ETag), wrk -t2 -c64 -d${DURATION}s:

| request | status | bytes on the wire (headers+body) | req/s | p99 | transfer/s |
|---|---|---|---|---|---|
| plain GET | 200 | $OK_BYTES | $FEED_RPS | $FEED_P99 | $FEED_TRANSFER |
| If-None-Match | 304 | $NOT_MODIFIED_BYTES | $NM_RPS | $NM_P99 | $NM_TRANSFER |
REPORT

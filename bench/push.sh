#!/usr/bin/env bash
# Direct APNs benchmark (issue: direct push). An alert fanned out to 100,000
# iOS registrations over HTTP/2 with TLS, end to end: database paging, copy,
# payloads, ES256 provider token, libcurl multiplexing. The APNs stand-in is
# nghttpd (nghttp2's C server, HTTP/2 + TLS, --echo-upload: it reads each
# body and answers 200), so the figure is the sidecar's; h2load against the
# same nghttpd gives the ceiling. (nginx's `return 200` cannot stand in: it
# answers before reading the body and resets the stream, which curl 7.88
# reports as a framing error. The provider token itself is verified against a
# real peer by script/peer-checks.)
#
#   bench/push.sh [registrations]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" nghttp2-server nghttp2-client openssl python3 time

REGISTRATIONS="${1:-100000}"
PORT=18801
bench_workspace
build_release
DB="$WORK/bench.sqlite3"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null

mkdir -p "$WORK/htdocs"
nghttpd --echo-upload -d "$WORK/htdocs" "$PORT" "$WORK/server.key" "$WORK/server.pem" > /dev/null 2>&1 & echo $! > "$WORK/nghttpd.pid"
sleep 0.5

"$BIN" region set --id 1 --agency-id 1 --database "$DB" >/dev/null
python3 - "$DB" "$REGISTRATIONS" <<'PY'
import sqlite3, sys, time
path, count = sys.argv[1], int(sys.argv[2])
now = int(time.time() * 1000)
db = sqlite3.connect(path)
db.executemany("""INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device,
    description, created_at, last_seen_at) VALUES (1, ?, 'ios', ?, NULL, 0, 0, NULL, ?, ?)""",
    [(f"{i:064x}", "es" if i % 4 == 0 else None, now, now) for i in range(count)])
db.commit()
PY
ID=$("$BIN" alert create --region 1 --header "Route 44 detoured this weekend" --description "Buses skip NW 45th St." \
  --start 2026-12-01T08:00:00-08:00 --database "$DB" | awk '{print $3}')
"$BIN" alert publish "$ID" --database "$DB" >/dev/null

START=$(date +%s.%N)
/usr/bin/time -v "$BIN" alert send "$ID" --push-transport direct --apns-key-file "$WORK/apns.p8" --apns-key-id KEYID12345 \
  --apns-team-id TEAMID1234 --apns-url "https://127.0.0.1:$PORT" --apns-ca-file "$WORK/server.pem" --database "$DB" \
  > "$WORK/send.out" 2> "$WORK/send.err"
END=$(date +%s.%N)
WALL=$(awk -v a="$START" -v b="$END" 'BEGIN { printf "%.2f", b - a }')
CPU=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u + s}' "$WORK/send.err")
PEAK=$(awk -F': ' '/Maximum resident/ {printf "%.1f", $2 / 1024}' "$WORK/send.err")
RATE=$(awk -v n="$REGISTRATIONS" -v t="$WALL" 'BEGIN { printf "%.0f", n / t }')

printf '{"aps":{"alert":{"title":"Route 44 detoured this weekend","body":"Buses skip NW 45th St."},"sound":"default"}}' > "$WORK/payload.json"
H2LOAD=$(h2load -n "$REGISTRATIONS" -c 4 -m 100 -d "$WORK/payload.json" -H "apns-topic: org.onebusaway.iphone" \
  "https://127.0.0.1:$PORT/3/device/0123" 2>&1)
CEILING=$(echo "$H2LOAD" | awk '/^finished in/ {gsub(",", "", $4); print $4}')

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)

Direct APNs fan-out of one alert to $REGISTRATIONS iOS registrations over HTTP/2 + TLS (nghttpd stand-in reading each body, answering 200):

| wall time | pushes/s | CPU (user+sys) | peak RSS | result |
|---|---|---|---|---|
| $WALL s | $RATE | $CPU s | $PEAK MB | $(tail -1 "$WORK/send.out") |

Ceiling: h2load -c 4 -m 100 against the same nghttpd, same payload: $CEILING req/s.
REPORT

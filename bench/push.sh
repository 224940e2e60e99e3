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
#   APNS_CONNECTIONS="1 2 4" (one fan-out per count), NGHTTPD_WORKERS=2
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" nghttp2-server nghttp2-client openssl python3 time

REGISTRATIONS="${1:-100000}"
# Connection counts to measure, one fan-out each; nghttpd's worker threads.
APNS_CONNECTIONS="${APNS_CONNECTIONS:-1 2 4}"
NGHTTPD_WORKERS="${NGHTTPD_WORKERS:-2}"
PORT=18801
bench_workspace
bench_binary
DB="$WORK/bench.sqlite3"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null

mkdir -p "$WORK/htdocs"
nghttpd --echo-upload --workers "$NGHTTPD_WORKERS" -d "$WORK/htdocs" "$PORT" "$WORK/server.key" "$WORK/server.pem" > /dev/null 2>&1 & echo $! > "$WORK/nghttpd.pid"
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
# send CONNECTIONS: a new alert, published and sent to every registration
# with --apns-connections CONNECTIONS; prints one table row.
send() {
  local connections="$1" id start end wall cpu peak rate per busiest
  id=$("$BIN" alert create --region 1 --header "Route 44 detoured this weekend" --description "Buses skip NW 45th St." \
    --start "$(bench_time 0)" --database "$DB" | awk '{print $3}')
  bench_published "$id" "$DB"
  start=$(date +%s.%N)
  /usr/bin/time -v "$BIN" alert send "$id" --push-transport direct --apns-key-file "$WORK/apns.p8" --apns-key-id KEYID12345 \
    --apns-team-id TEAMID1234 --apns-url "https://127.0.0.1:$PORT" --apns-ca-file "$WORK/server.pem" --database "$DB" \
    --apns-connections "$connections" > "$WORK/send.out" 2> "$WORK/send.err" &
  local timer=$!
  # The CPU of each libcurl driver thread ("curl-multi"), sampled until the
  # send ends: if the busiest is near 100% of the wall time, one multi handle is the limit.
  python3 - "$timer" > "$WORK/threads.out" <<'PY' &
import os, sys, time
parent, seen = int(sys.argv[1]), {}
tick = os.sysconf("SC_CLK_TCK")
def child():
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and open(f"/proc/{pid}/stat").read().split(") ")[1].split()[1] == str(parent):
                return pid
        except OSError:
            pass
while os.path.exists(f"/proc/{parent}"):
    pid = child()
    for task in os.listdir(f"/proc/{pid}/task") if pid else []:
        try:
            name = open(f"/proc/{pid}/task/{task}/comm").read().strip()
            fields = open(f"/proc/{pid}/task/{task}/stat").read().split(") ")[1].split()
            if name == "curl-multi":
                seen[task] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    time.sleep(0.2)
print(f"{max(seen.values(), default=0):.2f}")
PY
  local sampler=$!
  wait "$timer"
  wait "$sampler"
  end=$(date +%s.%N)
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u + s}' "$WORK/send.err")
  peak=$(awk -F': ' '/Maximum resident/ {printf "%.1f", $2 / 1024}' "$WORK/send.err")
  rate=$(awk -v n="$REGISTRATIONS" -v t="$wall" 'BEGIN { printf "%.0f", n / t }')
  per=$(awk -v c="$cpu" -v n="$REGISTRATIONS" 'BEGIN { printf "%.1f", c * 1e6 / n }')
  busiest=$(awk -v c="$(cat "$WORK/threads.out")" -v w="$wall" 'BEGIN { printf "%.0f%%", 100 * c / w }')
  echo "| $connections | 200 | $wall s | $rate | $cpu s | $per µs | $busiest | $peak MB | $(tail -1 "$WORK/send.out") |"
}
ROWS=""
for CONNECTIONS in $APNS_CONNECTIONS; do ROWS+="$(send "$CONNECTIONS")"$'\n'; done

printf '{"aps":{"alert":{"title":"Route 44 detoured this weekend","body":"Buses skip NW 45th St."},"sound":"default"}}' > "$WORK/payload.json"
H2LOAD=$(h2load -n "$REGISTRATIONS" -c 4 -m 100 -d "$WORK/payload.json" -H "apns-topic: org.onebusaway.iphone" \
  "https://127.0.0.1:$PORT/3/device/0123" 2>&1)
CEILING=$(echo "$H2LOAD" | awk '/^finished in/ {gsub(",", "", $4); print $4}')

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)

Direct APNs fan-out of one alert to $REGISTRATIONS iOS registrations over HTTP/2 + TLS (nghttpd stand-in with $NGHTTPD_WORKERS worker threads, reading each body, answering 200):

| APNs connections (\`--apns-connections\`) | streams in flight | wall time | pushes/s | CPU (user+sys) | CPU per push | busiest libcurl thread | peak RSS | result |
|---|---|---|---|---|---|---|---|---|
${ROWS%$'\n'}

Ceiling: h2load -c 4 -m 100 against the same nghttpd, same payload: $CEILING req/s.
REPORT

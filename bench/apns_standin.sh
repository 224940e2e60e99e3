#!/usr/bin/env bash
# The APNs stand-ins' own ceiling (issue 39): h2load posts PUSHES bodies of a
# Live Activity's size over 4 connections of 50 streams (what the sidecar's
# APNs client keeps in flight) to nghttpd and to nginx, each with 1 and 2
# workers, and reports requests a second and the stand-in's CPU per request.
# h2load runs on the same two cores, so each figure is a floor of the ceiling.
#
#   bench/apns_standin.sh [pushes]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages nghttp2-server nghttp2-client libnginx-mod-http-echo openssl nginx

PUSHES="${1:-200000}"
PORT=18213
bench_workspace
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
mkdir -p "$WORK/htdocs"
python3 -c 'import json; print(json.dumps({"aps": {"timestamp": 1767168000, "event": "update", "content-state": {"arrivalTime": 1767168300, "status": "On time", "minutes": 5, "vehicleId": "v_1"}, "alert": {"title": "Route 44", "body": "Ballard in 5 min"}}}))' > "$WORK/body.json"

cpu_of() { local total=0; for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo "$total"; }
echo "| stand-in | workers | requests/s | stand-in CPU per request |"
echo "|---|---:|---:|---:|"
for standin in nghttpd nginx; do
  for workers in 1 2; do
    if [ "$standin" = nginx ]; then
      start_nginx_apns "$WORK" "$PORT" "$WORK/server.pem" "$WORK/server.key" "$workers"
      sleep 0.5
      PIDS=$(pgrep -P "$(cat "$WORK/apns-nginx.pid")" | tr '\n' ' ')
    else
      nghttpd -n "$workers" --echo-upload -d "$WORK/htdocs" "$PORT" "$WORK/server.key" "$WORK/server.pem" > /dev/null 2>&1 & echo $! > "$WORK/nghttpd.pid"
      sleep 0.5
      PIDS=$(cat "$WORK/nghttpd.pid")
    fi
    # shellcheck disable=SC2086
    BEFORE=$(cpu_of $PIDS)
    RESULT=$(h2load -n "$PUSHES" -c 4 -m 50 -d "$WORK/body.json" -H 'apns-push-type: liveactivity' \
      "https://127.0.0.1:$PORT/3/device/0000000000000000000000000000000000000000000000000000000000000001" 2>&1)
    # shellcheck disable=SC2086
    AFTER=$(cpu_of $PIDS)
    RPS=$(echo "$RESULT" | awk '/^finished in/ {gsub(",", "", $4); print $4}')
    OK=$(echo "$RESULT" | awk '/^status codes:/ {print $3}')
    [ "$OK" = "$PUSHES" ] || { echo "$standin: $OK of $PUSHES answered 2xx" >&2; echo "$RESULT" >&2; exit 1; }
    echo "| $standin | $workers | ${RPS%.*} | $(awk -v c=$((AFTER - BEFORE)) -v n="$PUSHES" 'BEGIN { printf "%.1f µs", c * 10000 / n }') |"
    if [ "$standin" = nginx ]; then nginx -c "$WORK/apns-nginx.conf" -s quit 2>/dev/null; while [ -e "$WORK/apns-nginx.pid" ]; do sleep 0.1; done
    else kill "$(cat "$WORK/nghttpd.pid")"; wait "$(cat "$WORK/nghttpd.pid")" 2>/dev/null || true; rm -f "$WORK/nghttpd.pid"; fi
  done
done

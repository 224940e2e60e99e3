#!/usr/bin/env bash
# Instructions per request, counted by valgrind's callgrind (all threads):
# repeatable for the same binary and inputs whatever else the machine does,
# unlike req/s on two shared cores. One keep-alive client sends N POST
# push_registrations (unique tokens) after a 200-request warm-up; the count
# covers exactly those N. Run once with throttle off (answered 204) and once
# with every request over the throttle (answered 429).
#
#   bench/instructions.sh [requests] [binary ...]   (default: this build)
#   bench/instructions.sh --count REQUESTS BINARY [serve flags...]
#       prints the count for one configuration (used by bench/metrics.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" valgrind python3

ONE=""
if [ "${1:-}" = "--count" ]; then ONE=yes; shift; fi
REQUESTS="${1:-2000}"
shift || true
BINARIES=("$@")
if [ -z "$ONE" ] && [ ${#BINARIES[@]} -eq 0 ]; then
  swift build -c release --static-swift-stdlib --product sidecar >&2
  BINARIES=(.build/release/sidecar)
fi
PORT=18096
WORK="$(mktemp -d)"
trap 'kill $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$WORK"' EXIT

cat > "$WORK/drive.py" <<'PY'
import http.client, sys
port, count, first = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
for number in range(first, first + count):
    connection.request("POST", "/api/v2/regions/1/push_registrations",
                       body=f"token=t{number}x&operating_system=ios&locale=es-MX&test_device=false",
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    connection.getresponse().read()
PY

# count BINARY ARGS...: instructions per request.
count() {
  local binary="$1"; shift
  rm -rf "$WORK/run" && mkdir "$WORK/run"
  valgrind --tool=callgrind --callgrind-out-file="$WORK/run/cg.out" "$binary" serve --host 127.0.0.1 --port "$PORT" \
    --database "$WORK/run/db.sqlite3" --log-level warning "$@" > "$WORK/run/log" 2>&1 &
  local pid=$!
  echo $pid > "$WORK/server.pid"
  for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  python3 "$WORK/drive.py" "$PORT" 200 0
  callgrind_control -z $pid >/dev/null 2>&1
  python3 "$WORK/drive.py" "$PORT" "$REQUESTS" 100000
  callgrind_control -d $pid >/dev/null 2>&1
  kill -TERM $pid; wait $pid || true
  local total
  total=$(awk '/^(summary|totals):/ {print $2; exit}' "$(ls "$WORK"/run/cg.out.* | head -1)")
  awk -v t="$total" -v n="$REQUESTS" 'BEGIN { printf "%.0f", t / n }'
}

if [ -n "$ONE" ]; then
  count "${BINARIES[@]}"
  exit 0
fi

echo "| binary | answered 204 (throttle off) | answered 429 (throttled) |"
echo "|---|---|---|"
for binary in "${BINARIES[@]}"; do
  echo "| $binary | $(count "$binary" --push-registration-limit 0) | $(count "$binary" --push-registration-limit 1) |"
done

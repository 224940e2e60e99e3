#!/usr/bin/env bash
# The cost of the open-internet protections (issue 11) on the hottest write:
# POST push_registrations with unique tokens, wrk -t2 -c64, in one run:
#   - nginx static 204 (the ceiling),
#   - a baseline binary built before the protections (optional),
#   - this build with every per-client limit off,
#   - this build with every protection on and the registration throttle set
#     out of reach (so every request pays for the limiter, the connection
#     guard and the framing checks, and none is refused).
# Rounds are interleaved and the median of each is reported, with server CPU
# per request from /proc.
#
#   bench/limits.sh [duration_seconds] [rounds] [baseline_binary]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" wrk nginx-light

DURATION="${1:-10}"
ROUNDS="${2:-3}"
BASELINE="${3:-}"
PORT=18090
NGINX_PORT=18091
bench_workspace
build_release
start_nginx "$WORK" "$NGINX_PORT"

nginx_rps() {
  wrk -t2 -c64 -d"${DURATION}s" "http://127.0.0.1:$NGINX_PORT/" | awk '/^Requests\/sec/ {print $2}' >> "$WORK/nginx"
}

OFF=(--push-registration-limit 0 --max-connections-per-client 0)
ON=(--push-registration-limit 1000000)
for _ in $(seq "$ROUNDS"); do
  nginx_rps
  [ -n "$BASELINE" ] && measure baseline "$BASELINE" --push-registration-limit 0
  measure off "$BIN" "${OFF[@]}"
  measure on "$BIN" "${ON[@]}"
  # A flood the throttle refuses (one registration a minute allowed).
  [ -n "$BASELINE" ] && measure refused-baseline "$BASELINE" --push-registration-limit 1
  measure refused "$BIN" --push-registration-limit 1
done

NGINX=$(sort -n "$WORK/nginx" | awk '{ rows[NR] = $0 } END { print rows[int((NR + 1) / 2)] }')
row() {
  local label="$1" file="$WORK/$2"
  [ -f "$file" ] || return 0
  read -r rps p50 p99 cpu <<<"$(median "$file")"
  echo "| $label | $rps | $(awk -v a="$rps" -v b="$NGINX" 'BEGIN { printf "%.2f", a / b }') | $p50 | $p99 | $cpu µs |"
}

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); wrk -t2 -c64 -d${DURATION}s, median of $ROUNDS interleaved rounds; $(date -u +%Y-%m-%dT%H:%MZ)

| POST push_registrations (unique tokens) | req/s | vs nginx | p50 | p99 | server CPU per request |
|---|---|---|---|---|---|
| nginx static 204 (ceiling) | $NGINX | 1.00 | | | |
$(row "the baseline binary given" baseline)
$(row "limits off (--push-registration-limit 0 --max-connections-per-client 0)" off)
$(row "every protection on, throttle out of reach" on)
$(row "refused by the throttle (429), the baseline binary" refused-baseline)
$(row "refused by the throttle (429), this build" refused)
REPORT

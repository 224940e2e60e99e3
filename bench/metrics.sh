#!/usr/bin/env bash
# The cost of Prometheus metrics (issue 14) on the hottest write: POST
# push_registrations with unique tokens, wrk -t2 -c64, throttle off, with and
# without --metrics-listen, rounds interleaved, medians reported. While
# metrics are on, /metrics is scraped every second (Prometheus's default is
# every 15 s), so the cost of building the exposition is included.
# Then instructions per request counted by callgrind (bench/instructions.sh's
# driver, no scraping), which repeats exactly where req/s on two shared cores
# does not.
#
#   bench/metrics.sh [duration_seconds] [rounds] [callgrind_requests]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" wrk valgrind python3

DURATION="${1:-10}"
ROUNDS="${2:-5}"
REQUESTS="${3:-2000}"
PORT=18090
METRICS_PORT=18097
bench_workspace
build_release

# The scraper: once a second for the whole run (refused while metrics are off).
( while true; do curl -s "http://127.0.0.1:$METRICS_PORT/metrics" -o /dev/null || true; sleep 1; done ) &
echo $! > "$WORK/scraper.pid"

OFF=(--push-registration-limit 0)
ON=(--push-registration-limit 0 --metrics-listen "127.0.0.1:$METRICS_PORT")
for _ in $(seq "$ROUNDS"); do
  measure off "$BIN" "${OFF[@]}"
  measure on "$BIN" "${ON[@]}"
done
read -r OFF_RPS OFF_P50 OFF_P99 OFF_CPU <<<"$(median "$WORK/off")"
read -r ON_RPS ON_P50 ON_P99 ON_CPU <<<"$(median "$WORK/on")"

# Callgrind slows the server some fifty times, so a scrape a second would
# weigh on each request fifty times more than it does at full speed: the
# counts are taken without the scraper (the wrk rows above include it).
kill "$(cat "$WORK/scraper.pid")" && rm "$WORK/scraper.pid"
INSTRUCTIONS_OFF=$(bench/instructions.sh --count "$REQUESTS" "$BIN" "${OFF[@]}")
INSTRUCTIONS_ON=$(bench/instructions.sh --count "$REQUESTS" "$BIN" "${ON[@]}")

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); wrk -t2 -c64 -d${DURATION}s, median of $ROUNDS interleaved rounds; callgrind over $REQUESTS requests; $(date -u +%Y-%m-%dT%H:%MZ)

| POST push_registrations (unique tokens, throttle off) | req/s | p50 | p99 | server CPU per request | instructions per request |
|---|---|---|---|---|---|
| metrics off | $OFF_RPS | $OFF_P50 | $OFF_P99 | $OFF_CPU µs | $INSTRUCTIONS_OFF |
| --metrics-listen, scraped every second | $ON_RPS | $ON_P50 | $ON_P99 | $ON_CPU µs | $INSTRUCTIONS_ON |
| cost | $(awk -v a="$ON_RPS" -v b="$OFF_RPS" 'BEGIN { printf "%+.1f%% req/s", (a / b - 1) * 100 }') | | | $(awk -v a="$ON_CPU" -v b="$OFF_CPU" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }') | $(awk -v a="$INSTRUCTIONS_ON" -v b="$INSTRUCTIONS_OFF" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }') |
REPORT

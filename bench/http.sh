#!/usr/bin/env bash
# HTTP benchmark (issue: foundation). wrk with 2 threads and 64 connections for
# 10 s against GET /healthz and POST push_registrations (unique tokens,
# throttle off), and against nginx serving a static 204 on this machine in
# the same run as the ceiling. Prints a markdown table; RSS from /proc.
#
#   bench/http.sh [duration_seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" wrk nginx-light

DURATION="${1:-10}"
SIDECAR_PORT=18080
NGINX_PORT=18081
bench_workspace
build_release

start_nginx "$WORK" "$NGINX_PORT"

"$BIN" serve --host 127.0.0.1 --port "$SIDECAR_PORT" --database "$WORK/bench.sqlite3" \
  --push-registration-limit 0 --log-level warning > "$WORK/sidecar.log" 2>&1 &
echo $! > "$WORK/sidecar.pid"
SIDECAR_PID=$(cat "$WORK/sidecar.pid")
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$SIDECAR_PORT/healthz" >/dev/null && break; sleep 0.1; done

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$SIDECAR_PID/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$SIDECAR_PID/status"; }
IDLE_RSS=$(rss_kb)

# run NAME URL [wrk args...]: prints "req/s p50 p99" and samples RSS mid-run.
run() {
  local name="$1" url="$2"; shift 2
  (sleep "$((DURATION / 2))"; rss_kb > "$WORK/$name.rss") &
  wrk -t2 -c64 -d"${DURATION}s" --latency "$@" "$url" > "$WORK/$name.out"
  wait
  local rps p50 p99
  rps=$(awk '/^Requests\/sec/ {print $2}' "$WORK/$name.out")
  p50=$(awk '$1 == "50%" {print $2}' "$WORK/$name.out")
  p99=$(awk '$1 == "99%" {print $2}' "$WORK/$name.out")
  local errors
  errors=$(awk '/Non-2xx or 3xx responses/ {print $5}' "$WORK/$name.out")
  echo "$rps ${p50:-?} ${p99:-?} ${errors:-0}"
}

read -r NGINX_RPS NGINX_P50 NGINX_P99 NGINX_ERR <<<"$(run nginx "http://127.0.0.1:$NGINX_PORT/")"
read -r HEALTH_RPS HEALTH_P50 HEALTH_P99 HEALTH_ERR <<<"$(run healthz "http://127.0.0.1:$SIDECAR_PORT/healthz")"
read -r POST_RPS POST_P50 POST_P99 POST_ERR <<<"$(run post "http://127.0.0.1:$SIDECAR_PORT/" -s bench/push_registrations.lua)"
PEAK_RSS=$(hwm_kb)
ROWS=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SIDECAR_PORT/healthz")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

cat <<REPORT
Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); wrk -t2 -c64 -d${DURATION}s on the same host; $(date -u +%Y-%m-%dT%H:%MZ)

| target | req/s | vs nginx | p50 | p99 | non-2xx | sidecar RSS mid-run |
|---|---|---|---|---|---|---|
| nginx static 204 (ceiling) | $NGINX_RPS | 1.00 | $NGINX_P50 | $NGINX_P99 | $NGINX_ERR | |
| GET /healthz | $HEALTH_RPS | $(ratio "$HEALTH_RPS" "$NGINX_RPS") | $HEALTH_P50 | $HEALTH_P99 | $HEALTH_ERR | $(mb "$(cat "$WORK/healthz.rss")") MB |
| POST push_registrations (unique tokens) | $POST_RPS | $(ratio "$POST_RPS" "$NGINX_RPS") | $POST_P50 | $POST_P99 | $POST_ERR | $(mb "$(cat "$WORK/post.rss")") MB |

Sidecar RSS idle after start: $(mb "$IDLE_RSS") MB; peak (VmHWM) over the run: $(mb "$PEAK_RSS") MB. Health after load: HTTP $ROWS.
REPORT

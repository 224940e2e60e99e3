#!/usr/bin/env bash
# How soon writes come back after PostgreSQL restarts from an immediate stop
# (issue 39): a throwaway cluster on loopback, a sidecar on it under wrk
# (-t2, CONNECTIONS connections, POST push_registrations), then
# `pg_ctl stop -m immediate` and `pg_ctl start` (which returns once the
# cluster accepts connections after its crash recovery). Reports the time
# from then to the first write answered 204, read from the server's own
# refusals and a probe that posts every 20 ms, for each load given.
#
#   bench/postgres_outage.sh [connections ...]     # default: 0 64
#   SIDECAR_BIN=path bench/postgres_outage.sh 64   # another binary
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
source script/postgres
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" wrk postgresql curl

LOADS=("$@")
[ ${#LOADS[@]} -gt 0 ] || LOADS=(0 64)
PG_PORT=55441
PORT=18310
WORK="$(mktemp -d)"
chmod 755 "$WORK"
trap 'kill $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; sidecar_postgres_stop "$WORK/pg"; rm -rf "$WORK"' EXIT
bench_binary
sidecar_postgres_start "$WORK/pg" "$PG_PORT"
URL="$(sidecar_postgres_url "$PG_PORT")"

echo "| load (wrk connections) | writes back after pg_ctl start returned | probes refused |"
echo "|---|---|---|"
for load in "${LOADS[@]}"; do
  "$BIN" serve --host 127.0.0.1 --port "$PORT" --database "$URL" --push-registration-limit 0 --log-level warning \
    > "$WORK/server.log" 2>&1 &
  echo $! > "$WORK/server.pid"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  if [ "$load" -gt 0 ]; then
    wrk -t2 -c"$load" -d20s -s bench/push_registrations.lua "http://127.0.0.1:$PORT/" > "$WORK/wrk.out" 2>&1 &
    echo $! > "$WORK/wrk.pid"
  fi
  sleep 5
  sidecar_postgres_as "$SIDECAR_PG_BIN/pg_ctl" -D "$WORK/pg/data" -m immediate -w stop > /dev/null
  sleep 1
  sidecar_postgres_as "$SIDECAR_PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/server.log" -w start > /dev/null
  back=$(date +%s.%N)
  refused=0
  while true; do
    # From 127.0.0.2: wrk's connections fill 127.0.0.1's per-client cap.
    code=$(curl -s --interface 127.0.0.2 -o /dev/null -w '%{http_code}' -X POST \
      -d "token=outage${load}probe${refused}x&operating_system=ios" "http://127.0.0.1:$PORT/api/v2/regions/1/push_registrations" || true)
    [ "$code" = "204" ] && break
    refused=$((refused + 1))
    sleep 0.02
  done
  ok=$(date +%s.%N)
  echo "| $load | $(awk -v a="$back" -v b="$ok" 'BEGIN { printf "%.2f s", b - a }') | $refused |"
  [ -f "$WORK/wrk.pid" ] && { wait "$(cat "$WORK/wrk.pid")" 2>/dev/null || true; rm -f "$WORK/wrk.pid"; }
  kill -TERM "$(cat "$WORK/server.pid")"; wait "$(cat "$WORK/server.pid")" 2>/dev/null || true
  rm -f "$WORK/server.pid"
done

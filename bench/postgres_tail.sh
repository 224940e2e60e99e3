#!/usr/bin/env bash
# The PostgreSQL tail of POST push_registrations (issue 39): a throwaway cluster
# logging checkpoints, lock waits and autovacuum, a release sidecar on it (throttle
# off), wrk -t2 -c64 for DURATION seconds with unique tokens or with tokens drawn
# from a pool of 2,000 (apps re-registering the tokens they hold); prints the
# latency percentiles, the CPU the sidecar and PostgreSQL's processes spent per
# request, how many row updates PostgreSQL made in place, and what it logged.
# With AUTOVACUUM=busy, autovacuum is made to run throughout (naptime 1 s, a
# threshold of 1,000 changed rows, no scale factor), as on a busy server.
# With BACKEND=sqlite the same load runs against SQLite (the ratio's base).
#   bench/postgres_tail.sh DURATION unique|pool [sidecar serve flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/postgres
DUR="${1:-30}"; MODE="${2:-unique}"; shift 2 || true
W="$(mktemp -d)"; chmod 755 "$W"
trap 'kill $(cat $W/s.pid) 2>/dev/null || true; sidecar_postgres_stop $W/pg; rm -rf $W' EXIT
sidecar_postgres_start $W/pg 55490
sidecar_postgres_as tee -a $W/pg/data/postgresql.conf >/dev/null <<CONF
log_checkpoints = on
log_lock_waits = on
log_autovacuum_min_duration = 0
CONF
if [ "${AUTOVACUUM:-}" = busy ]; then sidecar_postgres_as tee -a $W/pg/data/postgresql.conf >/dev/null <<CONF
autovacuum_naptime = 1s
autovacuum_vacuum_threshold = 1000
autovacuum_vacuum_scale_factor = 0
autovacuum_analyze_threshold = 1000
autovacuum_analyze_scale_factor = 0
autovacuum_vacuum_insert_threshold = 1000
autovacuum_vacuum_insert_scale_factor = 0
autovacuum_vacuum_cost_delay = 0
CONF
fi
sidecar_postgres_as "$SIDECAR_PG_BIN/pg_ctl" -D $W/pg/data reload >/dev/null
DATABASE="$(sidecar_postgres_url 55490)"
[ "${BACKEND:-postgresql}" = sqlite ] && DATABASE="$W/sidecar.sqlite3"
${SIDECAR_BIN:-.build/release/sidecar} serve --host 127.0.0.1 --port 18300 --database "$DATABASE" --log-level warning --push-registration-limit 0 "$@" > $W/s.log 2>&1 &
echo $! > $W/s.pid
for _ in $(seq 100); do curl -fs http://127.0.0.1:18300/healthz >/dev/null && break; sleep 0.1; done
if [ "$MODE" = pool ]; then cat > $W/p.lua <<'LUA'
request = function()
  local body = "token=pooltoken" .. math.random(1, 2000) .. "&operating_system=ios&locale=es-MX&test_device=false"
  return wrk.format("POST", "/api/v2/regions/1/push_registrations", { ["Content-Type"] = "application/x-www-form-urlencoded" }, body)
end
LUA
LUA=$W/p.lua; else LUA=bench/push_registrations.lua; fi
# CPU (user + system ticks) of the sidecar and of every PostgreSQL process,
# before and after the load: what a registration costs each side.
ticks() { for pid in "$@"; do awk -v p="$pid" '{ print p, $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || true; done; }
postgres_pids() { [ "${BACKEND:-postgresql}" = sqlite ] || { local pm; pm=$(head -1 $W/pg/data/postmaster.pid); echo "$pm"; pgrep -P "$pm"; }; }
ticks $(cat $W/s.pid) > $W/s.before; ticks $(postgres_pids) > $W/pg.before
wrk -t2 -c64 -d${DUR}s --latency -s $LUA http://127.0.0.1:18300/ > $W/wrk.txt
ticks $(cat $W/s.pid) > $W/s.after; ticks $(postgres_pids) > $W/pg.after
grep -E "Requests/sec|50%|90%|99%|Non-2xx|Socket" $W/wrk.txt
REQUESTS=$(awk '/requests in/ {print $1}' $W/wrk.txt)
per_request() { awk -v r="$REQUESTS" -v k="$(getconf CLK_TCK)" 'NR == FNR { before[$1] = $2; next } { used += $2 - before[$1] } END { printf "%.1f", used / k / r * 1e6 }' "$1" "$2"; }
echo "CPU per request: sidecar $(per_request $W/s.before $W/s.after) µs, PostgreSQL $(per_request $W/pg.before $W/pg.after) µs"
# How many of the run's row updates PostgreSQL made in place (HOT: no index
# entry written), as its statistics had them a second after the load.
if [ "${BACKEND:-postgresql}" != sqlite ]; then sleep 1; PGPASSWORD=sidecar-test psql -qAt -h 127.0.0.1 -p 55490 -U sidecar sidecar -c \
  "SELECT 'row updates in place (HOT): ' || n_tup_hot_upd || ' of ' || n_tup_upd FROM pg_stat_user_tables WHERE relname = 'push_registrations'"; fi
grep -ciE "deadlock" $W/pg/server.log || true
echo "autovacuum runs logged: $(grep -ciE 'automatic (vacuum|analyze)' $W/pg/server.log || true)"
grep -iE "checkpoint complete|still waiting|deadlock|automatic" $W/pg/server.log | cut -c1-220 | head -12
grep -c . $W/s.log; head -3 $W/s.log

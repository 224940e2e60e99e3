#!/usr/bin/env bash
# Scale-out benchmark (issue 13), in one run on this machine:
#   1. POST push_registrations (unique tokens, throttle off) on SQLite and on
#      PostgreSQL (a throwaway local cluster, synchronous_commit on): req/s,
#      p50, p99;
#   2. one alarm cycle of 100,000 alarms on 2,000 stops (a fake OneBusAway
#      server answering after 20 ms) with one instance and with two on the
#      same PostgreSQL database: wall time until every alarm was checked.
#
#   bench/postgres.sh [duration_seconds] [alarms] [stops]
#   BASELINE_BIN=PATH also measures an earlier binary's POST at 8 connections.
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
source script/postgres
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" wrk postgresql python3 curl

DURATION="${1:-10}"
ALARMS="${2:-100000}"
STOPS="${3:-2000}"
PER_STOP=$(( ALARMS / STOPS ))
PG_PORT=55440
OBA_PORT=18211
PORT_A=18212
PORT_B=18213
WORK="$(mktemp -d)"
chmod 755 "$WORK"
trap 'kill $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; sidecar_postgres_stop "$WORK/pg"; rm -rf "$WORK"' EXIT

build_release
sidecar_postgres_start "$WORK/pg" "$PG_PORT"
ADMIN="$(sidecar_postgres_url "$PG_PORT")"
PG="${ADMIN%/*}/bench"
psql "$ADMIN" -q -c "CREATE DATABASE bench"

# serve NAME PORT DATABASE ARGS...: starts a sidecar, waits for it.
serve() {
  local name="$1" port="$2" database="$3"; shift 3
  "$BIN" serve --host 127.0.0.1 --port "$port" --database "$database" --log-level warning "$@" > "$WORK/$name.log" 2>&1 &
  echo $! > "$WORK/$name.pid"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && return 0; sleep 0.1; done
  cat "$WORK/$name.log" >&2; exit 1
}
stop() { kill -TERM "$(cat "$WORK/$1.pid")"; wait "$(cat "$WORK/$1.pid")" 2>/dev/null || true; rm -f "$WORK/$1.pid"; }

# post NAME PORT: one wrk run; prints "rps p50 p99".
post() {
  wrk -t2 -c64 -d"${DURATION}s" --latency -s bench/push_registrations.lua "http://127.0.0.1:$2/" > "$WORK/$1.wrk"
  local errors; errors=$(awk '/Non-2xx or 3xx responses/ {print $5}' "$WORK/$1.wrk")
  [ -z "$errors" ] || { echo "$1: $errors non-2xx answers" >&2; exit 1; }
  echo "$(awk '/^Requests\/sec/ {print $2}' "$WORK/$1.wrk") $(awk '$1 == "50%" {print $2}' "$WORK/$1.wrk") $(awk '$1 == "99%" {print $2}' "$WORK/$1.wrk")"
}

serve sqlite "$PORT_A" "$WORK/post.sqlite3" --push-registration-limit 0
read -r SQLITE_RPS SQLITE_P50 SQLITE_P99 <<<"$(post sqlite "$PORT_A")"
stop sqlite
# PostgreSQL at 1, 2, 4 and 8 pool connections (8: the default with 2 threads).
PG_ROWS=""
for CONNECTIONS in 1 2 4 8; do
  serve "postgres$CONNECTIONS" "$PORT_A" "$PG" --push-registration-limit 0 --database-connections "$CONNECTIONS"
  read -r RPS P50 P99 <<<"$(post "postgres$CONNECTIONS" "$PORT_A")"
  stop "postgres$CONNECTIONS"
  PG_ROWS+="| PostgreSQL, \`--database-connections $CONNECTIONS\` | $RPS | $(awk -v a="$RPS" -v b="$SQLITE_RPS" 'BEGIN { printf "%.2f", a / b }') | $P50 | $P99 |"$'\n'
done

# BASELINE_BIN=PATH: an earlier binary measured in the same run at the default pool.
if [ -n "${BASELINE_BIN:-}" ]; then
  SAVED_BIN="$BIN"; BIN="$BASELINE_BIN"
  serve baseline "$PORT_A" "$PG" --push-registration-limit 0 --database-connections 8
  read -r RPS P50 P99 <<<"$(post baseline "$PORT_A")"
  stop baseline
  BIN="$SAVED_BIN"
  PG_ROWS+="| PostgreSQL, \`--database-connections 8\`, baseline binary ($BASELINE_BIN) | $RPS | $(awk -v a="$RPS" -v b="$SQLITE_RPS" 'BEGIN { printf "%.2f", a / b }') | $P50 | $P99 |"$'\n'
fi

# The alarm cycle.
TRIPS_PER_STOP=$PER_STOP LATENCY_MS=20 python3 bench/fake_oba.py $OBA_PORT & echo $! > "$WORK/oba.pid"
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$OBA_PORT/stats" >/dev/null && break; sleep 0.1; done
cat > "$WORK/regions.json" <<JSON
{"data": {"list": [{"id": 1, "regionName": "Bench", "obaBaseUrl": "http://127.0.0.1:$OBA_PORT/", "sidecarBaseUrl": null}]}}
JSON

# Every alarm due now; departures 5 to 185 minutes ahead, as the fake OBA says.
load_alarms() {
  psql "$PG" -q <<SQL
DELETE FROM alarms;
INSERT INTO alarms (token, region_id, api_version, user_push_id, operating_system, stop_id, trip_id, service_date, vehicle_id,
                    stop_sequence, seconds_before, message, departure_estimate, next_check_at, created_at)
SELECT md5(i::text), 1, 2, 'device-' || i, 'ios', 's_' || (i % $STOPS), 't_' || (i % $STOPS) || '_' || ((i / $STOPS) % $PER_STOP),
       1767168000000, 'v_' || ((i / $STOPS) % $PER_STOP), 4, 600, 'The 44 to Ballard leaves in 10 minutes',
       $(date +%s%3N) + (5 + ((i % $STOPS) * $PER_STOP + (i / $STOPS) % $PER_STOP) % 180) * 60000, 0, 0
FROM generate_series(0, $ALARMS - 1) AS i;
SQL
}

# cycle INSTANCES: wall seconds until no alarm is left unchecked.
cycle() {
  load_alarms
  curl -fs "http://127.0.0.1:$OBA_PORT/stats" > "$WORK/before.json"
  local started; started=$(date +%s%N)
  serve one "$PORT_A" "$PG" --regions "$WORK/regions.json" --alarm-check-interval 3600 --push-transport none
  [ "$1" -ge 2 ] && serve two "$PORT_B" "$PG" --regions "$WORK/regions.json" --alarm-check-interval 3600 --push-transport none
  for _ in $(seq 3000); do
    [ "$(psql "$PG" -tA -c "SELECT COUNT(*) FROM alarms WHERE next_check_at = 0")" = "0" ] && break
    sleep 0.1
  done
  local ended; ended=$(date +%s%N)
  stop one
  [ "$1" -ge 2 ] && stop two
  python3 - "$WORK/before.json" "$(curl -fs "http://127.0.0.1:$OBA_PORT/stats")" "$started" "$ended" <<'PY'
import json, sys
before, after = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
print(f"{(int(sys.argv[4]) - int(sys.argv[3])) / 1e9:.1f} {after['stop'] - before['stop']} {after['trip'] - before['trip']}")
PY
}
# A warm-up cycle (caches, the fake's threads), then one and two instances.
cycle 1 >/dev/null
read -r ONE_SECONDS ONE_STOPS ONE_TRIPS <<<"$(cycle 1)"
read -r TWO_SECONDS TWO_STOPS TWO_TRIPS <<<"$(cycle 2)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); PostgreSQL $(psql "$ADMIN" -tA -c "SHOW server_version") on loopback (synchronous_commit on); wrk -t2 -c64 -d${DURATION}s; $(date -u +%Y-%m-%dT%H:%MZ)

| POST push_registrations (unique tokens, throttle off) | req/s | vs SQLite | p50 | p99 |
|---|---|---|---|---|
| SQLite | $SQLITE_RPS | 1.00 | $SQLITE_P50 | $SQLITE_P99 |
${PG_ROWS%$'\n'}

| one alarm cycle: $ALARMS alarms on $STOPS stops, fake OBA at 20 ms | wall time | stop requests | trip requests |
|---|---|---|---|
| one instance | $ONE_SECONDS s | $ONE_STOPS | $ONE_TRIPS |
| two instances, one PostgreSQL | $TWO_SECONDS s | $TWO_STOPS | $TWO_TRIPS |
REPORT

#!/usr/bin/env bash
# What the daily prune of push registrations costs (issue 39): ROWS registrations
# in one region, a share of them last seen 200 days ago (stale) and the rest now,
# then a sidecar started on that database, whose pruner runs at start. Reports the
# time from launch to the prune's log line ("pruned stale push registrations"),
# beside the time to the first /healthz answer, for each stale share and backend
# (PostgreSQL on a new cluster each time: the prune is a daily lease there).
# Since migration 35 `last_seen_at` has no index, so the prune walks the table by
# id: the case that matters is the usual day, when almost nothing is stale.
#
#   bench/prune.sh [ROWS]                  # default 1000000; SQLite and PostgreSQL
#   SIDECAR_BIN=path bench/prune.sh 200000 # another binary
#   BACKENDS=postgresql STALE=0 bench/prune.sh # one backend, one stale share
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
source script/postgres
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" postgresql sqlite3 curl

ROWS="${1:-1000000}"
PG_PORT=55442
PORT=18320
WORK="$(mktemp -d)"
chmod 755 "$WORK"
trap 'kill $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; sidecar_postgres_stop "$WORK/pg"; rm -rf "$WORK"' EXIT
bench_binary
PG_URL="$(sidecar_postgres_url "$PG_PORT")"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# fill BACKEND DATABASE STALE_PERCENT: a migrated database holding ROWS
# registrations, every (100 / STALE_PERCENT)th one stale.
fill() {
  local backend="$1" database="$2" stale="$3" now old
  now=$(now_ms); old=$(( now - 200 * 86400000 ))
  "$BIN" migrate --database "$database" > /dev/null
  local seen="$now"
  [ "$stale" -gt 0 ] && seen="CASE WHEN i % $(( 100 / stale )) = 0 THEN $old ELSE $now END"
  if [ "$backend" = sqlite ]; then
    sqlite3 "$database" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ROWS)
      INSERT INTO push_registrations (region_id, token, operating_system, created_at, last_seen_at)
      SELECT 1, printf('%064x', i), 'ios', $now, $seen FROM n"
  else
    PGPASSWORD=sidecar-test psql -qAt -h 127.0.0.1 -p "$PG_PORT" -U sidecar sidecar -c "INSERT INTO push_registrations (region_id, token, operating_system, created_at, last_seen_at)
      SELECT 1, lpad(to_hex(i), 64, '0'), 'ios', $now, $seen FROM generate_series(1, $ROWS) AS i" \
      -c "VACUUM ANALYZE push_registrations" > /dev/null
  fi
}

echo "| backend | registrations | stale | removed | launch to healthz | launch to the prune's log line |"
echo "|---|---:|---:|---:|---:|---:|"
for backend in ${BACKENDS:-sqlite postgresql}; do
  for stale in ${STALE:-0 50}; do
    database="$PG_URL"; [ "$backend" = sqlite ] && database="$WORK/prune-$stale.sqlite3"
    # A new cluster for each PostgreSQL case: the first server to prune takes the
    # day's lease in the database, and a second would rightly wait a day.
    if [ "$backend" = postgresql ]; then sidecar_postgres_stop "$WORK/pg"; rm -rf "$WORK/pg"; sidecar_postgres_start "$WORK/pg" "$PG_PORT"; fi
    fill "$backend" "$database" "$stale"
    log="$WORK/serve-$backend-$stale.log"
    start=$(now_ms)
    "$BIN" serve --host 127.0.0.1 --port "$PORT" --database "$database" --log-level info > "$log" 2>&1 &
    echo $! > "$WORK/serve.pid"
    healthy=""; pruned=""
    for _ in $(seq 30000); do
      [ -n "$healthy" ] || ! curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null || healthy=$(( $(now_ms) - start ))
      if [ -z "${pruned:-}" ] && grep -q "pruned stale push registrations" "$log"; then pruned=$(( $(now_ms) - start )); fi
      [ -n "${pruned:-}" ] && [ -n "$healthy" ] && break
      sleep 0.01
    done
    grep -q "pruned stale push registrations" "$log" || { echo "no prune logged within five minutes; the server's log:" >&2; tail -5 "$log" >&2; }
    removed=$(grep -o 'pruned stale push registrations.*removed=[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    kill "$(cat "$WORK/serve.pid")"; wait "$(cat "$WORK/serve.pid")" 2>/dev/null || true
    echo "| $backend | $ROWS | $stale% | $removed | ${healthy:-?} ms | ${pruned:-?} ms |"
  done
done

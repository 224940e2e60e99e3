#!/usr/bin/env bash
# Alert sources benchmark (issue 27). A GTFS-realtime Alerts feed of 1,000
# alerts x 40 translations (Tests/Peers/alert_feed_server.py), a release
# sidecar mirroring it with --interval 15 --push auto, 1,000 registrations and
# a gorush stand-in that logs when each push arrives. Reports:
#  1. CPU (user+sys) and peak RSS of one `sidecar source poll` in its own
#     process: the first (baseline, every alert stored), unchanged (answered
#     304), every alert changed; and of `sidecar source show`, the floor under
#     them (process start, database open).
#  2. The server's CPU across one interval of its own polling
#     (/proc/PID/stat utime+stime): with the poll answered 304, and with every
#     alert changed before it. Its idle work is in both; the difference is
#     what a full poll costs over a 304.
#  3. The server's peak RSS (VmHWM).
#  4. From a new SEVERE alert appearing in the source to the first push the
#     gorush stand-in accepts, the server polling on its own every 15 s.
#
#   bench/sources.sh [alerts] [translations]
#
# SIDECAR_BIN names another binary to measure (default: the release build,
# made when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages python3 python3-venv curl time

ALERTS="${1:-1000}"
TRANSLATIONS="${2:-40}"
INTERVAL=15
FEED_PORT=18601
GORUSH_PORT=18602
SIDECAR_PORT=18603
REGISTRATIONS=1000
bench_workspace
bench_binary
DB="$WORK/bench.sqlite3"

# The feed server needs Google's bindings: the peer checks' virtualenv.
VENV=.build/peer-venv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import google.transit.gtfs_realtime_pb2" 2>/dev/null || \
  "$VENV/bin/pip" install -q --disable-pip-version-check gtfs-realtime-bindings
PY="$VENV/bin/python"

"$PY" Tests/Peers/alert_feed_server.py --alerts "$ALERTS" --translations "$TRANSLATIONS" --port $FEED_PORT \
  > "$WORK/feed.out" 2> "$WORK/feed.err" &
echo $! > "$WORK/feed.pid"
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$FEED_PORT/control/stats" >/dev/null && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$FEED_PORT/control/stats" >/dev/null || { echo "the feed server did not start:" >&2; cat "$WORK/feed.err" >&2; exit 1; }
FEED_URL=$(head -1 "$WORK/feed.out")
FEED_BYTES=$(curl -s -o /dev/null -w '%{size_download}' "$FEED_URL")
FEED_GZIP_BYTES=$(curl -s -o /dev/null -H 'Accept-Encoding: gzip' -w '%{size_download}' "$FEED_URL")
feed_control() { curl -fs -X POST "http://127.0.0.1:$FEED_PORT/control/$1" >/dev/null; }

# gorush: answers every POST /api/push with success and logs when it came,
# how many notifications and the first one's title.
cat > "$WORK/gorush.py" <<'PY'
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
log = open(sys.argv[2], "a", buffering=1)
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def answer(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.answer(b'{"status":"ok"}')
    def do_POST(self):
        arrived = time.time()
        notifications = json.loads(self.rfile.read(int(self.headers["Content-Length"]))).get("notifications", [])
        title = notifications[0].get("title", "") if notifications else ""
        log.write(f"{arrived:.3f}\t{len(notifications)}\t{title}\n")
        self.answer(json.dumps({"counts": len(notifications), "logs": [], "success": "ok"}).encode())
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
: > "$WORK/pushes.log"
"$PY" "$WORK/gorush.py" $GORUSH_PORT "$WORK/pushes.log" & echo $! > "$WORK/gorush.pid"
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$GORUSH_PORT/healthz" >/dev/null && break; sleep 0.1; done

"$BIN" migrate --database "$DB" >/dev/null
"$BIN" region set --id 1 --agency-id 1 --timezone UTC --database "$DB" >/dev/null
"$PY" - "$DB" "$REGISTRATIONS" <<'PY'
import sqlite3, sys, time
path, count = sys.argv[1], int(sys.argv[2])
now = int(time.time() * 1000)
db = sqlite3.connect(path)
db.executemany("""INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device,
    created_at, last_seen_at) VALUES (1, ?, ?, ?, ?, 0, 0, ?, ?)""",
    [(f"{i:064x}", "android" if i % 3 == 0 else "ios", "es" if i % 4 == 0 else None, "es-US" if i % 4 == 0 else "en-US", now, now)
     for i in range(count)])
db.commit()
PY
SOURCE=$("$BIN" source add --region 1 --url "$FEED_URL" --interval $INTERVAL --push auto --database "$DB" | awk '/^source / {print $2}')
[ -n "$SOURCE" ] || { echo "source add failed" >&2; exit 1; }

# timed RUNS LABEL [--change] COMMAND...: RUNS runs under /usr/bin/time (with
# --change, every alert of the source changes before each); prints one table
# row: mean CPU per run, largest peak RSS, mean wall time, the last line the
# command printed.
timed() {
  local runs="$1" label="$2"; shift 2
  local change=""
  if [ "$1" = "--change" ]; then change=1; shift; fi
  : > "$WORK/times"
  for _ in $(seq "$runs"); do
    [ -n "$change" ] && feed_control change-all
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.out" "$@" > "$WORK/cmd.out" 2> "$WORK/cmd.err" || {
      echo "$label: $* failed:" >&2; cat "$WORK/cmd.out" "$WORK/cmd.err" >&2; exit 1; }
    tail -1 "$WORK/time.out" >> "$WORK/times"
  done
  awk -v label="$label" -v runs="$runs" -v last="$(tail -1 "$WORK/cmd.out" | cut -c1-60)" '
    { wall += $1; cpu += $2 + $3; if ($4 > rss) rss = $4 }
    END { printf "| %s | %d | %.3f s | %.1f MB | %.2f s | %s |\n", label, runs, cpu / runs, rss / 1024, wall / runs, last }' "$WORK/times"
}
poll=("$BIN" source poll "$SOURCE" --database "$DB")
FIRST=$(timed 1 "first (baseline: every alert stored)" "${poll[@]}")
UNCHANGED=$(timed 5 "unchanged (answered 304)" "${poll[@]}")
CHANGED=$(timed 3 "every alert changed" --change "${poll[@]}")
FLOOR=$(timed 5 "\`source show\` (the floor: start, database)" "$BIN" source show "$SOURCE" --database "$DB")

"$BIN" serve --host 127.0.0.1 --port $SIDECAR_PORT --database "$DB" --gorush-url "http://127.0.0.1:$GORUSH_PORT" \
  --send-lease-seconds 5 --log-level warning > "$WORK/sidecar.log" 2>&1 &
echo $! > "$WORK/sidecar.pid"
PID=$(cat "$WORK/sidecar.pid")
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$SIDECAR_PORT/healthz" >/dev/null && break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null || { echo "the server did not start:" >&2; cat "$WORK/sidecar.log" >&2; exit 1; }

cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
polls() { "$BIN" source show "$SOURCE" --database "$DB" 2>/dev/null | sed -n 's/^ *polls: *\([0-9][0-9]*\).*/\1/p'; }
# wait_poll N: until the source has been polled more than N times (the
# server's own polls; at most three intervals).
wait_poll() {
  local count
  for _ in $(seq $((INTERVAL * 3 * 5))); do
    count=$(polls)
    [ "${count:-0}" -gt "$1" ] && return 0
    sleep 0.2
  done
  echo "the server did not poll the source within $((INTERVAL * 3)) s" >&2; cat "$WORK/sidecar.log" >&2; exit 1
}
# interval [--change]: server CPU ticks from just after one of its polls to
# just after the next (every alert changed in between with --change).
interval() {
  local count before
  count=$(polls)
  wait_poll "${count:-0}"
  count=$(polls)
  before=$(cpu)
  [ "${1:-}" = "--change" ] && feed_control change-all
  wait_poll "${count:-0}"
  echo $(( $(cpu) - before ))
}
TICKS=$(getconf CLK_TCK)
seconds() { awk -v t="$1" -v k="$TICKS" 'BEGIN { printf "%.2f", t / k }'; }
SERVER_304=$(interval)
SERVER_CHANGED=$(interval --change)
HWM=$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status")

# A new SEVERE agency-wide alert: from its appearing to the first push.
START=$(date +%s.%N)
feed_control "add?id=bench-new"
FIRST_PUSH=""
for _ in $(seq $(( (INTERVAL * 3 + 15) * 10 ))); do
  FIRST_PUSH=$(awk -F'\t' '$3 ~ /bench-new/ {print $1; exit}' "$WORK/pushes.log")
  [ -n "$FIRST_PUSH" ] && break
  sleep 0.1
done
[ -n "$FIRST_PUSH" ] || { echo "no push of the new alert arrived:" >&2; cat "$WORK/sidecar.log" >&2; exit 1; }
LATENCY=$(awk -v a="$START" -v b="$FIRST_PUSH" 'BEGIN { printf "%.1f", b - a }')
PUSHED=$(awk -F'\t' '$3 ~ /bench-new/ {n += $2} END {print n + 0}' "$WORK/pushes.log")

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)
Source: $ALERTS alerts x $TRANSLATIONS translations (header and description each), $FEED_BYTES bytes ($FEED_GZIP_BYTES gzipped);
$REGISTRATIONS registrations; the source added with --interval $INTERVAL --push auto.

One \`sidecar source poll $SOURCE\` in its own process (/usr/bin/time; mean of the runs):

| poll | runs | CPU (user+sys) | peak RSS | wall | last line printed |
|---|---|---|---|---|---|
$FIRST
$UNCHANGED
$CHANGED
$FLOOR

\`sidecar serve\` polling on its own, one $INTERVAL s interval each (/proc/$PID/stat utime+stime, idle work included):

| interval | server CPU |
|---|---|
| its poll answered 304 | $(seconds "$SERVER_304") s |
| every alert changed before its poll | $(seconds "$SERVER_CHANGED") s |
| difference (a full poll over a 304) | $(seconds $((SERVER_CHANGED - SERVER_304))) s |

Server peak RSS (VmHWM): $HWM MB.

A new SEVERE agency-wide alert in the source to the first push accepted by the gorush stand-in: $LATENCY s
(the server polling every $INTERVAL s: up to $INTERVAL s of that is waiting for the next poll); $PUSHED notifications of it by the end.
REPORT

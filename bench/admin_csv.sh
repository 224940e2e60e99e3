#!/usr/bin/env bash
# Admin API CSV export benchmark (issue 28). A survey with RESPONSES
# responses (1,000,000 by default) in SQLite, a release sidecar, and
# GET /admin/api/surveys/ID/responses.csv read by curl with an API key.
# Reports, for exports at a tenth of the responses and at all of them: rows,
# bytes, wall time, throughput, and the server's peak RSS (VmHWM) before and
# after, so flat memory shows as the same peak at 10x the rows.
#
#   bench/admin_csv.sh [responses]
#
# SIDECAR_BIN names another binary to measure (default: the release build,
# made when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages python3 curl

RESPONSES="${1:-1000000}"
PORT=18611
bench_workspace
bench_binary
DB="$WORK/bench.sqlite3"
"$BIN" migrate --database "$DB" >/dev/null 2>&1
"$BIN" region set --id 1 --agency-id 1 --timezone America/Los_Angeles --database "$DB" >/dev/null 2>&1
KEY=$("$BIN" apikey create --name bench --region 1 --database "$DB" 2>/dev/null)

"$BIN" serve --host 127.0.0.1 --port $PORT --database "$DB" --admin-api-limit 0 --log-level warning > "$WORK/sidecar.log" 2>&1 &
echo $! > "$WORK/sidecar.pid"
PID=$(cat "$WORK/sidecar.pid")
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null || { echo "the server did not start:" >&2; cat "$WORK/sidecar.log" >&2; exit 1; }
api() { curl -fsS -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" "$@"; }
BASE="http://127.0.0.1:$PORT/admin/api"
STUDY=$(api -X POST "$BASE/regions/1/studies" -d '{"name":"Bench"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
SURVEY_JSON=$(api -X POST "$BASE/regions/1/surveys" -d '{"study_id": '"$STUDY"', "name": "Rider survey", "available": true,
  "questions": [{"required": true, "content": {"type": "radio", "label_text": "How was your trip?", "options": ["Great", "Fine", "Bad"]}},
                {"required": false, "content": {"type": "text", "label_text": "Anything else?"}}]}')
read -r SURVEY Q1 Q2 < <(echo "$SURVEY_JSON" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["id"], *[q["id"] for q in s["questions"]])')

# insert FROM TO: responses FROM..TO-1, written straight into the table (the
# rider route's per-client limits would make this take hours).
insert() {
  python3 - "$DB" "$SURVEY" "$Q1" "$Q2" "$1" "$2" <<'PY'
import json, sqlite3, sys
path, survey, q1, q2, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
db = sqlite3.connect(path, timeout=60)
choices = ["Great", "Fine", "Bad"]
def rows():
    for i in range(start, end):
        answers = [{"question_id": q1, "question_type": "radio", "question_label": "How was your trip?", "answer": choices[i % 3]},
                   {"question_id": q2, "question_type": "text", "question_label": "Anything else?",
                    "answer": "=HYPERLINK(\"x\")" if i % 1000 == 0 else f"The 44 was on time, trip {i}"}]
        yield (f"{i:032x}", survey, f"user-{i % 50000}", f"1_{i % 9000}", 47.6 + (i % 100) / 1000, -122.3 - (i % 100) / 1000,
               json.dumps(answers), 1796140800 + i, 1796140800 + i)
db.executemany("""INSERT INTO survey_responses (public_id, survey_id, user_identifier, stop_identifier, stop_latitude,
    stop_longitude, responses, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows())
db.commit()
PY
}
hwm() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status"; }

# export ROWS: one streamed export; prints a table row.
export_row() {
  local rows="$1" before after
  before=$(hwm)
  curl -fsS -H "Authorization: Bearer $KEY" -o "$WORK/export.csv" \
    -w '%{time_total} %{size_download}\n' "$BASE/surveys/$SURVEY/responses.csv" > "$WORK/curl.out"
  after=$(hwm)
  local lines; lines=$(($(wc -l < "$WORK/export.csv") - 1))
  [ "$lines" -eq "$rows" ] || { echo "exported $lines rows, expected $rows" >&2; exit 1; }
  grep -q "'=HYPERLINK" "$WORK/export.csv" || { echo "a formula cell was not neutralised" >&2; exit 1; }
  read -r seconds bytes < "$WORK/curl.out"
  awk -v r="$rows" -v s="$seconds" -v b="$bytes" -v h0="$before" -v h1="$after" \
    'BEGIN { printf "| %d | %.1f MB | %.2f s | %.0f rows/s | %s MB | %s MB |\n", r, b / 1048576, s, r / s, h0, h1 }'
}

TENTH=$((RESPONSES / 10))
insert 0 "$TENTH"
SMALL=$(export_row "$TENTH")
insert "$TENTH" "$RESPONSES"
LARGE=$(export_row "$RESPONSES")
kill -0 "$PID" 2>/dev/null || { echo "the server died:" >&2; cat "$WORK/sidecar.log" >&2; exit 1; }

cat <<TABLE
Admin API CSV export, $(date -u +%Y-%m-%d), $(nproc) cores, $("$BIN" --version 2>/dev/null | head -1)

| responses | CSV size | wall time | throughput | server peak RSS before | server peak RSS after |
|---:|---:|---:|---:|---:|---:|
$SMALL
$LARGE
TABLE

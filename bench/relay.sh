#!/usr/bin/env bash
# The signed push relay's cost (issue 17). One alert fanned out to N iOS
# registrations, twice in the same run against the same HTTP/2 + TLS APNs
# stand-in (nginx reading each body and answering 200; STANDIN=nghttpd for
# the stand-in of the sections before 2026-12-07):
#   - direct: the sidecar signs and sends to APNs itself (bench/push.sh's path);
#   - relay:  the sidecar signs version 2 requests (100 tokens each until the
#             relay's answer says it takes 1,000) to `sidecar relay`, which
#             verifies them, checks the bindings and sends to APNs.
# Reports pushes/s, and CPU and peak RSS of the sidecar and of the relay.
#
#   bench/relay.sh [registrations]
#   ROUNDS=N bench/relay.sh             # N rounds of both paths, alternating; each round's ratio, the median,
#                                       # and the ratio of the CPU summed over all rounds (the steadier figure)
#   RELAY_PROFILE=FILE bench/relay.sh   # also: perf samples of the relay's send, top entries in FILE
#   STANDIN=nghttpd bench/relay.sh      # the earlier stand-in
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" nghttp2-server nginx libnginx-mod-http-echo openssl python3 time curl

REGISTRATIONS="${1:-50000}"
APNS_PORT=18811
RELAY_PORT=18812
bench_workspace
bench_binary

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null
# The APNs stand-in: nginx reading each body in memory (the default), or
# STANDIN=nghttpd, which writes every body to a file under /tmp and so spends
# a third of the machine creating and deleting files, in the same kernel
# paths and on the same two cores as the processes measured.
STANDIN_NAME="${STANDIN:-nginx}"
if [ "$STANDIN_NAME" = nghttpd ]; then
  mkdir -p "$WORK/htdocs"
  nghttpd --echo-upload -d "$WORK/htdocs" "$APNS_PORT" "$WORK/server.key" "$WORK/server.pem" > /dev/null 2>&1 & echo $! > "$WORK/nghttpd.pid"
else
  start_nginx_apns "$WORK" "$APNS_PORT" "$WORK/server.pem" "$WORK/server.key"
fi
APNS=(--apns-key-file "$WORK/apns.p8" --apns-key-id KEYID12345 --apns-team-id TEAMID1234 --apns-url "https://127.0.0.1:$APNS_PORT"
  --apns-ca-file "$WORK/server.pem")

"$BIN" relay --host 127.0.0.1 --port "$RELAY_PORT" --database "$WORK/relay.sqlite3" --log-level warning "${APNS[@]}" \
  > "$WORK/relay.log" 2>&1 & echo $! > "$WORK/relay.pid"
RELAY_PID=$(cat "$WORK/relay.pid")
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$RELAY_PORT/healthz" >/dev/null && break; sleep 0.1; done
SERVER_ID=$("$BIN" relay-key create --relay-key-file "$WORK/sidecar-key.pem" 2>/dev/null | awk '/^serverId/ {print $2}')

DB="$WORK/bench.sqlite3"
"$BIN" region set --id 1 --agency-id 1 --database "$DB" >/dev/null
# The registrations, and their bindings at the relay (as the binder would make them).
python3 - "$DB" "$WORK/relay.sqlite3" "$REGISTRATIONS" "$SERVER_ID" <<'PY'
import base64, hashlib, sqlite3, sys, time
path, relay, count, server = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
now = int(time.time() * 1000)
tokens = [f"{i:064x}" for i in range(count)]
db = sqlite3.connect(path)
db.executemany("""INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device,
    description, created_at, last_seen_at) VALUES (1, ?, 'ios', NULL, NULL, 0, 0, NULL, ?, ?)""", [(t, now, now) for t in tokens])
db.commit()
# Folded into the database file now: otherwise the first send's process folds the log
# of 50,000 inserts, and that send (the direct one) pays for it.
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
r = sqlite3.connect(relay)
r.executemany("INSERT INTO relay_bindings (token_hash, server_id, platform, bound_at) VALUES (?, ?, 'ios', ?)",
              [(base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode(), server, now) for t in tokens])
r.commit()
r.execute("PRAGMA wal_checkpoint(TRUNCATE)")
PY

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# send NAME FLAGS...: one alert to every registration; prints "wall pushes/s cpu rss result".
send() {
  local name="$1"; shift
  local id
  id=$("$BIN" alert create --region 1 --header "Route 44 detoured ($name)" --description "Buses skip NW 45th St." \
    --start "$(bench_time 0)" --database "$DB" | awk '{print $3}')
  bench_published "$id" "$DB"
  local start end relay_before relay_after
  relay_before=$(cpu_ticks "$RELAY_PID")
  start=$(date +%s.%N)
  /usr/bin/time -v "$BIN" alert send "$id" --database "$DB" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err"
  end=$(date +%s.%N)
  relay_after=$(cpu_ticks "$RELAY_PID")
  local wall cpu rss
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u + s}' "$WORK/$name.err")
  rss=$(awk -F': ' '/Maximum resident/ {printf "%.1f", $2 / 1024}' "$WORK/$name.err")
  echo "$wall $(awk -v n="$REGISTRATIONS" -v t="$wall" 'BEGIN { printf "%.0f", n / t }') $cpu $rss \
$(awk -v t=$((relay_after - relay_before)) -v k="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / k }')"
}

# delivered NAME: stops the bench unless that send delivered every push.
delivered() {
  grep -q "delivered $REGISTRATIONS," "$WORK/$1.out" 2>/dev/null && return 0
  echo "bench: the $1 send did not deliver every push:" >&2; cat "$WORK/$1.out" "$WORK/publish.err" >&2 2>/dev/null; exit 1
}
read -r D_WALL D_RATE D_CPU D_RSS _ <<<"$(send direct --push-transport direct "${APNS[@]}")"
delivered direct
# RELAY_PROFILE=FILE: perf samples of the relay during its send, summarised into FILE.
if [ -n "${RELAY_PROFILE:-}" ]; then
  command -v perf >/dev/null || sidecar_install_packages linux-perf
  perf record -F 999 -g -p "$RELAY_PID" -o "$WORK/perf.data" > /dev/null 2>&1 & echo $! > "$WORK/perf.pid"
  sleep 1
fi
read -r R_WALL R_RATE R_CPU R_RSS R_RELAY_CPU <<<"$(send relay --push-transport relay --relay-url "http://127.0.0.1:$RELAY_PORT" \
  --relay-key-file "$WORK/sidecar-key.pem")"
delivered relay
if [ -n "${RELAY_PROFILE:-}" ]; then
  kill -INT "$(cat "$WORK/perf.pid")"; wait "$(cat "$WORK/perf.pid")" 2>/dev/null || true; rm -f "$WORK/perf.pid"
  perf report -i "$WORK/perf.data" --stdio --no-children --sort dso,symbol > "$WORK/perf.txt" 2>/dev/null || true
  awk '/%/ && !/^#/ && n++ < 40' "$WORK/perf.txt" > "$RELAY_PROFILE"
fi
RELAY_RSS=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$RELAY_PID/status")

# ROUNDS=N: the two paths N times, alternating, on the same stand-in and relay. Direct
# delivery's own cost moves by a third between rounds on a shared machine, so one round's
# ratio can land on either side of a target; the median of several is the figure to quote.
ROUNDS="${ROUNDS:-1}"
# ratio DIRECT SIDECAR RELAY [DECIMALS]: the relay path's CPU over direct's, in percent.
ratio() { awk -v d="$1" -v r="$2" -v x="$3" -v p="${4:-0}" 'BEGIN { printf "%+.*f", p, ((r + x) / d - 1) * 100 }'; }
RATIOS=("$(ratio "$D_CPU" "$R_CPU" "$R_RELAY_CPU")")
# The CPU of every round summed per path: the ratio of these sums is steadier
# than any one round's ratio, since the machine's speed drifts between sends.
DIRECT_SUM="$D_CPU"
RELAY_SIDECAR_SUM="$R_CPU"
RELAY_PROCESS_SUM="$R_RELAY_CPU"
sum() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a + b }'; }
ROUND_LINES=()
for ((round = 2; round <= ROUNDS; round++)); do
  read -r _ _ d_cpu _ _ <<<"$(send "direct-$round" --push-transport direct "${APNS[@]}")"
  delivered "direct-$round"
  read -r _ _ r_cpu _ r_relay_cpu <<<"$(send "relay-$round" --push-transport relay --relay-url "http://127.0.0.1:$RELAY_PORT" \
    --relay-key-file "$WORK/sidecar-key.pem")"
  delivered "relay-$round"
  RATIOS+=("$(ratio "$d_cpu" "$r_cpu" "$r_relay_cpu")")
  DIRECT_SUM=$(sum "$DIRECT_SUM" "$d_cpu")
  RELAY_SIDECAR_SUM=$(sum "$RELAY_SIDECAR_SUM" "$r_cpu")
  RELAY_PROCESS_SUM=$(sum "$RELAY_PROCESS_SUM" "$r_relay_cpu")
  ROUND_LINES+=("round $round: direct $(awk -v c="$d_cpu" -v n="$REGISTRATIONS" 'BEGIN { printf "%.1f", c / n * 1e6 }') µs a push; \
through the relay $(awk -v c="$r_cpu" -v r="$r_relay_cpu" -v n="$REGISTRATIONS" 'BEGIN { printf "%.1f", (c + r) / n * 1e6 }') µs \
(sidecar $r_cpu s, relay $r_relay_cpu s); ${RATIOS[-1]}%")
done
MEDIAN=$(printf '%s\n' "${RATIOS[@]}" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%+.0f", m }')

cat <<REPORT
Machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)

One alert to $REGISTRATIONS iOS registrations, HTTP/2 + TLS APNs stand-in ($STANDIN_NAME), same run:

| path | wall time | pushes/s | sidecar CPU | sidecar peak RSS | relay CPU | relay peak RSS | result |
|---|---|---|---|---|---|---|---|
| direct | $D_WALL s | $D_RATE | $D_CPU s | $D_RSS MB | | | $(tail -1 "$WORK/direct.out") |
| through the relay | $R_WALL s | $R_RATE | $R_CPU s | $R_RSS MB | $R_RELAY_CPU s | $RELAY_RSS MB | $(tail -1 "$WORK/relay.out") |

Total CPU per push: direct $(awk -v c="$D_CPU" -v n="$REGISTRATIONS" 'BEGIN { printf "%.1f", c / n * 1e6 }') µs; through the relay \
$(awk -v c="$R_CPU" -v r="$R_RELAY_CPU" -v n="$REGISTRATIONS" 'BEGIN { printf "%.1f", (c + r) / n * 1e6 }') µs (sidecar and relay).

Relay over direct, CPU per push, $ROUNDS round(s) (the first is the table's): $(IFS=,; echo "${RATIOS[*]}" | sed 's/,/%, /g')%; median $MEDIAN%.
Over all rounds: direct $DIRECT_SUM s, through the relay $(sum "$RELAY_SIDECAR_SUM" "$RELAY_PROCESS_SUM") s (sidecar $RELAY_SIDECAR_SUM s, \
relay $RELAY_PROCESS_SUM s): relay over direct $(ratio "$DIRECT_SUM" "$RELAY_SIDECAR_SUM" "$RELAY_PROCESS_SUM" 1)% (the ratio of the sums).
REPORT
printf '%s\n' "${ROUND_LINES[@]}"

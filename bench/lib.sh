# Shared by the benchmark scripts (sourced, not run).

# bench_workspace: a fresh WORK directory; on exit every process whose pid
# file is in it is stopped and the directory removed.
bench_workspace() {
  WORK="$(mktemp -d)"
  trap 'kill $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$WORK"' EXIT
}

# bench_time MINUTES: the time MINUTES from now (negative: ago) in UTC, as the
# CLI's --start and --end take it. A bench's alerts start now, so they never age
# out of the publish-time checks (an alert whose shown period is over is refused).
bench_time() { date -u -d "${1:-0} minutes" +%Y-%m-%dT%H:%M:%SZ; }

# bench_published ID DB: publishes alert ID or stops the bench saying why.
bench_published() {
  "$BIN" alert publish "$1" --database "$2" > /dev/null 2> "$WORK/publish.err" || {
    echo "bench: alert $1 was not published:" >&2; cat "$WORK/publish.err" >&2; exit 1
  }
}

# build_release: builds the binary the benchmarks measure (release, static
# Swift runtime) and names it in BIN.
build_release() {
  swift build -c release --static-swift-stdlib --product sidecar >&2
  BIN=.build/release/sidecar
}

# bench_binary: names in BIN the binary to measure: SIDECAR_BIN when set,
# else the release build, built when missing.
bench_binary() {
  BIN="${SIDECAR_BIN:-.build/release/sidecar}"
  if [ ! -x "$BIN" ]; then
    sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}"
    build_release
  fi
}

# start_nginx WORK PORT [EXTRA_LOCATIONS]: nginx with 2 workers and no access
# log on 127.0.0.1:PORT, answering 204 to everything but EXTRA_LOCATIONS
# (which may use $now_ms, the time in epoch milliseconds);
# its pid file lands in WORK so the scripts' EXIT traps stop it.
start_nginx() {
  local work="$1" port="$2" extra="${3:-}"
  cat > "$work/nginx.conf" <<NGINX
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  map \$msec \$now_ms { "~^(?<seconds>[0-9]+)[.](?<millis>[0-9]+)\$" "\$seconds\$millis"; }
  client_body_temp_path $work;
  proxy_temp_path $work;
  fastcgi_temp_path $work;
  uwsgi_temp_path $work;
  scgi_temp_path $work;
  client_max_body_size 10m;
  server {
    listen 127.0.0.1:$port;
    $extra
    location / { return 204; }
  }
}
NGINX
  nginx -c "$work/nginx.conf"
}

# start_nginx_apns WORK PORT CERT KEY [WORKERS] [LOG]: an APNs stand-in: nginx over
# HTTP/2 + TLS on 127.0.0.1:PORT answering 200 with no body to every POST, as
# APNs does to a push it accepts. It reads each body before it answers (the echo
# module): an answer sent while the body is still arriving ends the stream
# early, which libcurl counts as a failed push. Connections are never closed
# for their request count (APNs keeps them for hours). LOG, when given, gets
# one line per push: the time it arrived (epoch seconds), its path, its status,
# and "alarm" when its text is a departure alarm's ("... leaves in 5 minutes").
start_nginx_apns() {
  local work="$1" port="$2" cert="$3" key="$4" workers="${5:-1}" log="off"
  [ -n "${6:-}" ] && log="$6 pushes buffer=256k flush=1s"
  mkdir -p "$work/apns-nginx"
  cat > "$work/apns-nginx.conf" <<NGINX
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes $workers;
pid $work/apns-nginx.pid;
error_log $work/apns-nginx-error.log;
events { worker_connections 1024; }
http {
  map \$request_body \$push_kind { "~leaves (now|in)" alarm; default other; }
  log_format pushes '\$msec \$request_uri \$status \$push_kind';
  access_log $log;
  client_body_temp_path $work/apns-nginx;
  proxy_temp_path $work/apns-nginx;
  fastcgi_temp_path $work/apns-nginx;
  uwsgi_temp_path $work/apns-nginx;
  scgi_temp_path $work/apns-nginx;
  keepalive_requests 100000000;
  keepalive_timeout 3600s;
  http2_max_concurrent_streams 1000;
  server {
    listen 127.0.0.1:$port ssl http2;
    ssl_certificate $cert;
    ssl_certificate_key $key;
    location / { echo_read_request_body; echo -n ''; }
  }
}
NGINX
  nginx -c "$work/apns-nginx.conf"
}

# measure NAME BINARY ARGS...: one wrk run (-t2 -c64, DURATION seconds) of
# POST push_registrations with unique tokens against BINARY serving on PORT
# with a fresh database in WORK; appends "rps p50 p99 cpu_us" to WORK/NAME.
# Runs whose name starts with "refused" expect every answer to be a 429.
measure() {
  local name="$1" binary="$2"; shift 2
  rm -f "$WORK/db.sqlite3"*
  "$binary" serve --host 127.0.0.1 --port "$PORT" --database "$WORK/db.sqlite3" --log-level warning "$@" > "$WORK/server.log" 2>&1 &
  local pid=$!
  echo $pid > "$WORK/server.pid"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  local before after
  kill -0 $pid 2>/dev/null || { echo "$name: the server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; }
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  wrk -t2 -c64 -d"${DURATION}s" --latency -s bench/push_registrations.lua "http://127.0.0.1:$PORT/" > "$WORK/wrk.out"
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  kill -TERM $pid; wait $pid || true
  local rps requests errors
  rps=$(awk '/^Requests\/sec/ {print $2}' "$WORK/wrk.out")
  requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
  errors=$(awk '/Non-2xx or 3xx responses/ {print $5}' "$WORK/wrk.out")
  case "$name" in
    refused*) [ -n "$errors" ] || { echo "$name: expected refusals" >&2; exit 1; } ;;
    *) [ -z "$errors" ] || { echo "$name: $errors non-2xx answers" >&2; exit 1; } ;;
  esac
  local ticks; ticks=$(getconf CLK_TCK)
  echo "$rps $(awk '$1 == "50%" {print $2}' "$WORK/wrk.out") $(awk '$1 == "99%" {print $2}' "$WORK/wrk.out") \
    $(awk -v t=$((after - before)) -v r="$requests" -v k="$ticks" 'BEGIN { printf "%.1f", t / k / r * 1e6 }')" >> "$WORK/$name"
}

# median FILE: the row of FILE with the median first column.
median() { sort -n -k1,1 "$1" | awk '{ rows[NR] = $0 } END { print rows[int((NR + 1) / 2)] }'; }

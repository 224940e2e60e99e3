# Shared by the benchmark scripts (sourced, not run).

# start_nginx WORK PORT [EXTRA_LOCATIONS]: nginx with 2 workers and no access
# log on 127.0.0.1:PORT, answering 204 to everything but EXTRA_LOCATIONS;
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

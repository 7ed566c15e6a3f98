#!/usr/bin/env bash
# Debian's nginx as a stand-in for Wikimedia's edge, in front of the seeded wiki (127.0.0.1:8785 -> 8780)
# and the writable wiki (127.0.0.1:8787 -> 8782). It refuses generic User-Agents (403), meters each
# identity (the credential when authenticated, else the User-Agent) with limit_conn and limit_req per
# second and per minute, answers excess with 429 + Retry-After, logs every request as one JSON line in
# .run/nginx/access.log, and serves .run/nginx/files/ under /files/ without limits.
# Its own master process with a config rendered from nginx.conf.in + nginx-server.conf.in, not the system
# service; state under .run/nginx/.
#
# up: install nginx + its njs module if missing, render the config, start it, or reload it when the
#     rendered config changed (a second `up` with the same settings returns at once). down, status.
#
# Settings (environment of `up`; the defaults are Wikimedia's numbers; GET /.edge/limits shows them):
#   BW_EDGE_ANON_IN_FLIGHT=1  BW_EDGE_ANON_PER_S=5   BW_EDGE_ANON_PER_MIN=200    anonymous identity
#   BW_EDGE_AUTH_IN_FLIGHT=3  BW_EDGE_AUTH_PER_S=10  BW_EDGE_AUTH_PER_MIN=2000   authenticated identity
#   BW_EDGE_{ANON,AUTH}_BURST_S    per-second bucket depth, default max(1, PER_S / 5)
#   BW_EDGE_{ANON,AUTH}_BURST_MIN  per-minute bucket depth, default PER_MIN / 10 (see nginx.conf.in)
#   BW_EDGE_RETRY_AFTER_S=1        the Retry-After of a 429
#   BW_EDGE_PORT=8785 -> BW_MW_PORT=8780;  BW_EDGE_WRITABLE_PORT=8787 -> BW_MW_WRITABLE_PORT=8782
#   BW_EDGE_DIR=.run/nginx         another directory (and ports) runs a second, independent edge
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck source=common.sh
source "$ROOT/scripts/services/common.sh"
HERE=$ROOT/scripts/services
DIR=${BW_EDGE_DIR:-$ROOT/.run/nginx}
PIDFILE=$DIR/nginx.pid
CONF=$DIR/nginx.conf
NGINX=/usr/sbin/nginx
JS_MODULE=/usr/lib/nginx/modules/ngx_http_js_module.so
PY=${PYTHON:-python3}

SEEDED_PORT=${BW_EDGE_PORT:-8785}
SEEDED_UPSTREAM=${BW_MW_PORT:-8780}
WRITABLE_PORT=${BW_EDGE_WRITABLE_PORT:-8787}
WRITABLE_UPSTREAM=${BW_MW_WRITABLE_PORT:-8782}
ANON_IN_FLIGHT=${BW_EDGE_ANON_IN_FLIGHT:-1}
ANON_PER_S=${BW_EDGE_ANON_PER_S:-5}
ANON_PER_MIN=${BW_EDGE_ANON_PER_MIN:-200}
AUTH_IN_FLIGHT=${BW_EDGE_AUTH_IN_FLIGHT:-3}
AUTH_PER_S=${BW_EDGE_AUTH_PER_S:-10}
AUTH_PER_MIN=${BW_EDGE_AUTH_PER_MIN:-2000}
RETRY_AFTER_S=${BW_EDGE_RETRY_AFTER_S:-1}
# the bursts' defaults follow the rates: set by check_settings once those are known to be numbers

log() { echo "nginx: $*"; }

install_packages() {
  [ -x "$NGINX" ] && [ -f "$JS_MODULE" ] && return
  log "installing Debian packages (nginx libnginx-mod-http-js)"
  local t0
  t0=$(now)
  apt_install nginx libnginx-mod-http-js
  log "packages installed in $(since "$t0") s"
}

whole_numbers() {
  local name
  for name in "$@"; do
    [[ "${!name}" =~ ^[0-9]+$ ]] || { log "$name must be a whole number, not '${!name}' (settings: top of $0)"; exit 2; }
  done
}

check_settings() {
  local name
  whole_numbers SEEDED_PORT SEEDED_UPSTREAM WRITABLE_PORT WRITABLE_UPSTREAM ANON_IN_FLIGHT ANON_PER_S ANON_PER_MIN \
    AUTH_IN_FLIGHT AUTH_PER_S AUTH_PER_MIN RETRY_AFTER_S
  for name in ANON_IN_FLIGHT ANON_PER_S ANON_PER_MIN AUTH_IN_FLIGHT AUTH_PER_S AUTH_PER_MIN; do
    [ "${!name}" -gt 0 ] || { log "$name must be at least 1"; exit 2; }
  done
  ANON_BURST_S=${BW_EDGE_ANON_BURST_S:-$(( ANON_PER_S / 5 > 1 ? ANON_PER_S / 5 : 1 ))}
  AUTH_BURST_S=${BW_EDGE_AUTH_BURST_S:-$(( AUTH_PER_S / 5 > 1 ? AUTH_PER_S / 5 : 1 ))}
  ANON_BURST_MIN=${BW_EDGE_ANON_BURST_MIN:-$(( ANON_PER_MIN / 10 ))}
  AUTH_BURST_MIN=${BW_EDGE_AUTH_BURST_MIN:-$(( AUTH_PER_MIN / 10 ))}
  whole_numbers ANON_BURST_S AUTH_BURST_S ANON_BURST_MIN AUTH_BURST_MIN
}

limits_json() {
  printf '{"anonymous": {"in_flight": %d, "per_s": %d, "per_min": %d, "burst_s": %d, "burst_min": %d}, ' \
    "$ANON_IN_FLIGHT" "$ANON_PER_S" "$ANON_PER_MIN" "$ANON_BURST_S" "$ANON_BURST_MIN"
  printf '"authenticated": {"in_flight": %d, "per_s": %d, "per_min": %d, "burst_s": %d, "burst_min": %d}, ' \
    "$AUTH_IN_FLIGHT" "$AUTH_PER_S" "$AUTH_PER_MIN" "$AUTH_BURST_S" "$AUTH_BURST_MIN"
  printf '"retry_after_s": %d, "wikis": {"seeded": {"port": %d, "upstream": %d}, ' \
    "$RETRY_AFTER_S" "$SEEDED_PORT" "$SEEDED_UPSTREAM"
  printf '"writable": {"port": %d, "upstream": %d}}}' "$WRITABLE_PORT" "$WRITABLE_UPSTREAM"
}

# render TEMPLATE: the template with every @NAME@ replaced by the shell variable NAME
render() {
  local args=() name
  for name in $(grep -o '@[A-Z_]*@' "$1" | sort -u | tr -d @); do
    args+=(-e "s|@$name@|${!name}|g")
  done
  sed "${args[@]}" "$1"
}

# Renders into DIR/next, with paths to where it will live (DIR/conf); `swap_config` puts it there.
render_config() {
  local USER_LINE="" LIMITS_JSON WIKI LISTEN_PORT UPSTREAM_PORT CONF=$DIR/conf
  # workers drop root; when not root there is nothing to drop
  [ "$(id -u)" = 0 ] && USER_LINE="user www-data;"
  LIMITS_JSON=$(limits_json)
  rm -rf "$DIR/next"
  mkdir -p "$DIR/next/servers"
  render "$HERE/nginx.conf.in" >"$DIR/next/nginx.conf"
  cp "$HERE/nginx-identity.js" "$DIR/next/nginx-identity.js"
  WIKI=seeded LISTEN_PORT=$SEEDED_PORT UPSTREAM_PORT=$SEEDED_UPSTREAM
  render "$HERE/nginx-server.conf.in" >"$DIR/next/servers/seeded.conf"
  WIKI=writable LISTEN_PORT=$WRITABLE_PORT UPSTREAM_PORT=$WRITABLE_UPSTREAM
  render "$HERE/nginx-server.conf.in" >"$DIR/next/servers/writable.conf"
  echo "$LIMITS_JSON" >"$DIR/next/limits.json"
}

# 0 when the rendered config equals the one in place
config_unchanged() { diff -qr "$DIR/next" "$DIR/conf" >/dev/null 2>&1; }

# DIR/next becomes DIR/conf once nginx accepts it; a config it rejects leaves the old one in place
swap_config() {
  rm -rf "$DIR/conf.old"
  [ -d "$DIR/conf" ] && mv "$DIR/conf" "$DIR/conf.old"
  mv "$DIR/next" "$DIR/conf"
  if ! nginx_cmd -t -q 2>&1; then
    rm -rf "$DIR/conf"
    [ -d "$DIR/conf.old" ] && mv "$DIR/conf.old" "$DIR/conf"
    log "nginx rejected the rendered configuration"; exit 1
  fi
  rm -rf "$DIR/conf.old"
  cp "$DIR/conf/limits.json" "$DIR/limits.json"
}

nginx_cmd() { "$NGINX" -p "$DIR" -e "$DIR/error.log" -c "$DIR/conf/nginx.conf" "$@"; }

pid() { cat "$PIDFILE" 2>/dev/null || true; }

running() {
  local p
  p=$(pid)
  [ -n "$p" ] && grep -qa "nginx: master" "/proc/$p/cmdline" 2>/dev/null
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# 0 once both edges answer GET /.edge/limits with the limits just rendered
answers() {
  "$PY" - "$SEEDED_PORT" "$WRITABLE_PORT" "$DIR/limits.json" <<'PYEOF' >/dev/null 2>&1
import json, sys, urllib.request
want = json.load(open(sys.argv[3]))
for port in sys.argv[1:3]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/.edge/limits", timeout=3) as resp:
        if json.load(resp) != want:
            sys.exit(1)
PYEOF
}

wait_answers() {
  for _ in $(seq 100); do
    answers && return 0
    sleep 0.05
  done
  log "the edge did not answer on 127.0.0.1:$SEEDED_PORT and :$WRITABLE_PORT; see $DIR/error.log"
  exit 1
}

where() {
  log "edges http://127.0.0.1:$SEEDED_PORT/api.php -> :$SEEDED_UPSTREAM (seeded)," \
      "http://127.0.0.1:$WRITABLE_PORT/api.php -> :$WRITABLE_UPSTREAM (writable); pid $(pid);" \
      "log ${DIR#"$ROOT"/}/access.log; limits $(cat "$DIR/limits.json")"
}

start() {
  local port
  for port in "$SEEDED_PORT" "$WRITABLE_PORT"; do
    if port_taken "$port"; then log "127.0.0.1:$port is already in use by another process"; exit 1; fi
  done
  nginx_cmd 9>&- </dev/null
}

up() {
  install_packages
  check_settings
  mkdir -p "$DIR/files" "$DIR/tmp"
  exec 9>"$DIR/.lock"
  flock 9
  render_config
  if running && config_unchanged && answers; then
    rm -rf "$DIR/next"
    where
    return
  fi
  swap_config
  [ "$(id -u)" = 0 ] && chown -R www-data: "$DIR/tmp"
  if running; then
    nginx_cmd -s reload
    log "reloaded with the new settings"
  else
    rm -f "$PIDFILE"
    start
  fi
  wait_answers
  where
}

down() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
  local p
  p=$(pid)
  if running; then
    kill -TERM "$p"
    for _ in $(seq 50); do running || break; sleep 0.1; done
    running && kill -KILL "$p"
  fi
  rm -f "$PIDFILE"
  log "stopped"
}

status() {
  if running && answers; then
    where
  else
    log "not running"; return 1
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac

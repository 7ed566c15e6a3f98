#!/usr/bin/env bash
# MediaWiki 1.39 from Debian packages (SQLite), seeded from tools/wikigen, served by `php -S` on 127.0.0.1:8780.
# up: install packages if missing; build and seed the wiki once per generator version+seed; start the server.
# The seed is the generator's dump (importDump.php) plus its change tags (tools/wikitags, through the API).
# A second `up` only (re)starts the server. down: stop the server's process group. status: 0 iff answering.
# rebuild: build the wiki again from scratch, then start it.
# BW_MW_DIR and BW_MW_GENERATOR (a module with wikigen's command line) build another wiki elsewhere (benchmarks).
# Sourced by mediawiki-writable.sh, which sets the MW_* variables below and overrides the hooks
# (generate_seed, want_stamp, needs_build, extra_settings, after_seed) for the writable wiki.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck source=common.sh
source "$ROOT/scripts/services/common.sh"
PORT=${MW_PORT:-${BW_MW_PORT:-8780}}
SEED=${BW_MW_SEED:-1}
PY=${PYTHON:-python3}
DIR=${MW_DIR:-${BW_MW_DIR:-$ROOT/.run/mediawiki}}
GEN=${BW_MW_GENERATOR:-tools.wikigen}
DBNAME=${MW_DBNAME:-my_wiki}    # also the cookie prefix: two wikis on 127.0.0.1 must not share cookies
SITENAME=${MW_SITENAME:-BlackWidow Test Wiki}
WIKI=$DIR/wiki          # LocalSettings.php + data/ (SQLite); rebuilt from scratch when the stamp differs
SEEDDIR=$DIR/seed       # dump.xml, users.txt, expected.json.gz (read by the tests)
STAMP=$WIKI/seeded
PIDFILE=$DIR/server.pid
MWCODE=/usr/share/mediawiki
API=http://127.0.0.1:$PORT/api.php
ADMIN_PASS='AdminPass-12345'   # install.php rejects short or common passwords

NAME=${MW_NAME:-mediawiki}      # log prefix

log() { echo "$NAME: $*"; }

install_packages() {
  # grep reads all of php -m: with -q it would exit early and fail the pipe (pipefail)
  if [ -f "$MWCODE/maintenance/importDump.php" ] && php -m 2>/dev/null | grep -x pdo_sqlite >/dev/null; then
    return
  fi
  log "installing Debian packages (mediawiki php-sqlite3 php-cli)"
  local t0
  t0=$(now)
  apt_install mediawiki php-sqlite3 php-cli
  log "packages installed in $(since "$t0") s"
}

pid() { cat "$PIDFILE" 2>/dev/null || true; }

running() {
  local p
  p=$(pid)
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null && grep -qa php "/proc/$p/cmdline" 2>/dev/null
}

api_answers() {
  "$PY" - "$API" <<'PYEOF' >/dev/null 2>&1
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "?action=query&meta=siteinfo&format=json&formatversion=2",
                             headers={"User-Agent": "BlackWidow-services/0.1 (local readiness check)"})
with urllib.request.urlopen(req, timeout=5) as resp:
    sys.exit(0 if "query" in json.load(resp) else 1)
PYEOF
}

port_taken() {
  "$PY" -c 'import socket, sys; sys.exit(socket.socket().connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0)' "$PORT"
}

stop_server() {
  local p
  p=$(pid)
  if running; then
    # workers forked by PHP_CLI_SERVER_WORKERS outlive their parent: signal the whole group
    kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null || true
    for _ in $(seq 50); do running || break; sleep 0.1; done
    running && kill -9 -- -"$p" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

# --- hooks (mediawiki-writable.sh overrides them) ---
want_stamp() { echo "wikigen=$("$PY" -m "$GEN" --version) seed=$SEED port=$PORT"; }
needs_build() { [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$(want_stamp)" ]; }
generate_seed() { "$PY" -m "$GEN" --out "$SEEDDIR" --seed "$SEED"; }
extra_settings() { :; }         # prints more LocalSettings.php lines
after_seed() { apply_tags; }    # runs with the server up; a failure leaves no stamp

build_wiki() {
  local t0 t1 n_users created revs code
  log "building the wiki in $WIKI ($(want_stamp))"
  t0=$(now)
  generate_seed | sed "s/^/$NAME: /"
  log "generated in $(since "$t0") s"

  # install.php refuses an existing LocalSettings.php or SQLite tables: always a fresh directory
  rm -rf "$WIKI"
  mkdir -p "$WIKI/data"
  t1=$(now)
  env -u MW_CONFIG_FILE php "$MWCODE/maintenance/install.php" \
    --dbtype=sqlite --dbpath="$WIKI/data" --dbname="$DBNAME" --confpath="$WIKI" \
    --server="http://127.0.0.1:$PORT" --scriptpath="" --lang=en \
    --pass="$ADMIN_PASS" "$SITENAME" Admin >"$DIR/install.log" 2>&1 \
    || { tail -20 "$DIR/install.log"; exit 1; }
  cat >>"$WIKI/LocalSettings.php" <<PHPEOF

# --- test knobs (scripts/services/mediawiki.sh) ---
# Simulated replication lag so maxlag errors are real: write seconds into $DIR/fake_lag, delete to clear.
\$wgHooks['ApiMaxLagInfo'][] = static function ( &\$lagInfo ) {
	\$f = '$DIR/fake_lag';
	if ( is_readable( \$f ) ) {
		\$lagInfo = [ 'host' => 'db-test', 'lag' => (float)trim( file_get_contents( \$f ) ), 'type' => 'db' ];
	}
};
# Rate limits only work with an object cache; CACHE_DB uses the separate wikicache.sqlite.
\$wgMainCacheType = CACHE_DB;
# Requests stay read-only: no job queue runs inside API calls.
\$wgJobRunRate = 0;
# Lets a logged-in Admin apply revision deletion (action=revisiondelete) in tests.
\$wgGroupPermissions['sysop']['deleterevision'] = true;
\$wgShowExceptionDetails = true;
PHPEOF
  extra_settings >>"$WIKI/LocalSettings.php"
  log "installed in $(since "$t1") s"

  # The importer keeps a contributor's name only if the account exists locally.
  t1=$(now)
  n_users=$(grep -c . "$SEEDDIR/users.txt")
  # eval.php runs one line at a time
  code="\$n = 0; foreach ( file( '$SEEDDIR/users.txt', FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES ) as \$u )"
  code+=" { if ( User::createNew( \$u ) ) { \$n++; } } echo \"created=\$n\\n\";"
  created=$(echo "$code" | MW_CONFIG_FILE="$WIKI/LocalSettings.php" php "$MWCODE/maintenance/eval.php" 2>&1 \
    | sed -n 's/.*created=\([0-9]*\).*/\1/p')
  if [ "$created" != "$n_users" ]; then
    log "created ${created:-0} of $n_users user accounts"; exit 1
  fi
  log "$created users created in $(since "$t1") s"

  t1=$(now)
  MW_CONFIG_FILE="$WIKI/LocalSettings.php" php "$MWCODE/maintenance/importDump.php" --no-updates \
    "$SEEDDIR/dump.xml" >"$DIR/import.log" 2>&1 || { tail -20 "$DIR/import.log"; exit 1; }
  revs=$(grep -c '<revision>' "$SEEDDIR/dump.xml")
  log "imported $revs revisions in $(since "$t1") s"

  # Tags go through the API as Admin, so the server runs before the stamp: a failure leaves no stamp
  # and the next `up` rebuilds.
  start_server
  if ! after_seed; then
    stop_server
    log "seeding through the API failed"; exit 1
  fi
  want_stamp >"$STAMP"
  log "wiki built in $(since "$t0") s"
}

apply_tags() {
  local t1
  t1=$(now)
  BW_MW_ADMIN_PASSWORD="$ADMIN_PASS" "$PY" -m tools.wikitags --api "$API" --expected "$SEEDDIR/expected.json.gz" \
    | sed "s/^/$NAME: /" || return 1
  log "tags applied in $(since "$t1") s"
}

start_server() {
  local t0 p
  if running && api_answers; then return; fi
  stop_server
  if port_taken; then
    log "127.0.0.1:$PORT is already in use by another process"; exit 1
  fi
  t0=$(now)
  MW_CONFIG_FILE="$WIKI/LocalSettings.php" PHP_CLI_SERVER_WORKERS=4 \
    setsid php -S "127.0.0.1:$PORT" -t "$MWCODE" >"$DIR/server.log" 2>&1 </dev/null 9>&- &
  echo $! >"$PIDFILE"
  for _ in $(seq 300); do
    if api_answers; then
      log "server ready in $(since "$t0") s"
      return
    fi
    running || { tail -20 "$DIR/server.log"; log "server exited"; exit 1; }
    sleep 0.1
  done
  log "API did not answer within 30 s (log: $DIR/server.log)"; exit 1
}

up() {
  install_packages
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
  if needs_build; then
    stop_server
    build_wiki
  fi
  start_server
  log "listening on $API (pid $(pid); seed data in $SEEDDIR)"
}

down() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
  stop_server
  log "stopped"
}

status() {
  if running && api_answers; then
    log "running on $API (pid $(pid))"
  else
    log "not running"; return 1
  fi
}

rebuild() {
  mkdir -p "$DIR"
  rm -f "$STAMP"
  up
}

main() {
  case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    rebuild) rebuild ;;
    *) echo "usage: $0 up|down|status|rebuild" >&2; exit 2 ;;
  esac
}

# sourced by mediawiki-writable.sh: functions only
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi

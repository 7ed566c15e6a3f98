#!/usr/bin/env bash
# PostgreSQL 15 from Debian packages, in a project-owned data dir on 127.0.0.1:55432.
# up: install if missing, initdb once, start, ensure role+database. Idempotent. down: fast stop.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PORT=${BW_PG_PORT:-55432}
DIR=$ROOT/.run/postgres
DATA=$DIR/data
SOCK=$DIR/sock
PGBIN=/usr/lib/postgresql/15/bin
ROLE=blackwidow
PASS=blackwidow

as_pg() { runuser -u postgres -- "$@"; }

install() {
  if [ ! -x "$PGBIN/postgres" ]; then
    echo "postgres: installing Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-client-15 >/dev/null
  fi
}

running() { [ -f "$DATA/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

psql_admin() { as_pg "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -qtAX "$@"; }

up() {
  install
  mkdir -p "$DIR"
  # the server runs as 'postgres' and must reach its own folders
  chown postgres: "$DIR"
  if [ ! -f "$DATA/PG_VERSION" ]; then
    as_pg mkdir -p "$DATA" "$SOCK"
    as_pg "$PGBIN/initdb" -D "$DATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
  fi
  as_pg mkdir -p "$SOCK"
  if ! running; then
    as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PORT -k $SOCK -c fsync=off -c max_connections=200" start >/dev/null
  fi
  if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname='$ROLE'")" != 1 ]; then
    psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASS'"
  fi
  if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname='$ROLE'")" != 1 ]; then
    psql_admin -c "CREATE DATABASE $ROLE OWNER $ROLE"
  fi
  echo "postgres: listening on 127.0.0.1:$PORT (postgresql+psycopg2://$ROLE:$PASS@127.0.0.1:$PORT/$ROLE)"
}

down() {
  if running; then as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; fi
  echo "postgres: stopped"
}

status() {
  if running; then echo "postgres: running on 127.0.0.1:$PORT"; else echo "postgres: not running"; return 1; fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac

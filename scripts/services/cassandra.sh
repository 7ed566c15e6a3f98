#!/usr/bin/env bash
# Apache Cassandra 5.0, one node, from Maven Central jars on the machine's JDK 17; CQL on 127.0.0.1:9042.
# up: install JDK 17 + Maven if missing, fetch the jars once into .cache/cassandra/lib-<version>,
#     start CassandraDaemon detached with data and log in .run/cassandra, wait until a CQL query
#     through the Python driver succeeds. Idempotent: a running node is reused.
# down: SIGTERM (Cassandra drains), SIGKILL after BW_CASSANDRA_STOP_TIMEOUT_S.  status: exit 0 when CQL answers.
# nodetool ARGS: Cassandra's nodetool over the local-only JMX port.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS=$ROOT/tools/cassandra
VERSION=$(sed -n 's:.*<cassandra.version>\(.*\)</cassandra.version>.*:\1:p' "$TOOLS/pom.xml")
LIB=$ROOT/.cache/cassandra/lib-$VERSION
DIR=$ROOT/.run/cassandra
PIDFILE=$DIR/cassandra.pid
LOG=$DIR/cassandra.log
HOST=127.0.0.1
PORT=${BW_CASSANDRA_PORT:-9042}
STORAGE_PORT=${BW_CASSANDRA_STORAGE_PORT:-7000}
JMX_PORT=${BW_CASSANDRA_JMX_PORT-7199}        # empty: JMX off
HEAP=${BW_CASSANDRA_HEAP:-1G}
READY_TIMEOUT_S=${BW_CASSANDRA_READY_TIMEOUT_S:-300}
STOP_TIMEOUT_S=${BW_CASSANDRA_STOP_TIMEOUT_S:-60}
PY=$ROOT/.venv/bin/python
# pinned: Maven 3.8's default dependency plugin (2.8) is too old to rely on
DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

java_home() {
  local d
  for d in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$d/bin/java" ]; then echo "$d"; return 0; fi
  done
  return 1
}

install() {
  local pkgs=()
  java_home >/dev/null || pkgs+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null || pkgs+=(maven)
  if [ ${#pkgs[@]} -gt 0 ]; then
    echo "cassandra: installing Debian packages: ${pkgs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  fi
  if [ ! -x "$PY" ]; then
    echo "cassandra: $PY is missing (run \`make venv\`)" >&2
    exit 1
  fi
}

fetch() {
  [ -f "$LIB/.complete" ] && return 0
  echo "cassandra: fetching cassandra-all $VERSION and its dependencies with Maven (once)"
  local tmp=$LIB.partial
  rm -rf "$tmp"
  if ! JAVA_HOME=$(java_home) mvn -B -q -f "$TOOLS/pom.xml" "$DEP_PLUGIN:copy-dependencies" \
      -DincludeScope=runtime -DoutputDirectory="$tmp" > "$DIR/maven.log" 2>&1; then
    echo "cassandra: Maven could not fetch the jars; last lines of $DIR/maven.log:" >&2
    tail -n 40 "$DIR/maven.log" >&2
    exit 1
  fi
  touch "$tmp/.complete"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
}

# a zombie or a recycled pid has no CassandraDaemon command line
is_node() { [ -n "$1" ] && grep -qa CassandraDaemon "/proc/$1/cmdline" 2>/dev/null; }

# pid of our node when it is alive (the pid file alone can be stale after a reboot or kill -9)
our_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  is_node "$pid" || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# prints the release version once a CQL query succeeds; fails on timeout or when the JVM dies
cql_ready() { "$PY" "$ROOT/scripts/services/cql_ready.py" "$HOST" "$PORT" "$@"; }

where() {
  local jmx="off"
  [ -n "$JMX_PORT" ] && jmx="$HOST:$JMX_PORT"
  echo "cassandra: Cassandra $1 listening on $HOST:$PORT (CQL), storage $HOST:$STORAGE_PORT, JMX $jmx;" \
       "data and log in ${DIR#"$ROOT"/}"
}

start() {
  sed -e "s/@NATIVE_PORT@/$PORT/g" -e "s/@STORAGE_PORT@/$STORAGE_PORT/g" \
    "$TOOLS/cassandra.yaml.in" > "$DIR/cassandra.yaml"
  mkdir -p "$DIR/triggers"
  local jmx=() jamm
  # local-only JMX (for nodetool); the RMI server shares the port instead of taking a random one
  [ -n "$JMX_PORT" ] && jmx=(-Dcassandra.jmx.local.port="$JMX_PORT" -Dcom.sun.management.jmxremote.rmi.port="$JMX_PORT")
  jamm=$(ls "$LIB"/jamm-*.jar | head -n1)
  echo "=== start $(date -Is) ===" >> "$LOG"
  # setsid: the node outlives this shell and gets its own process group; fd 9 (our lock) stays here.
  # The -Dcassandra.* start-up knobs skip gossip settling and ring delay, pointless on one node.
  setsid "$(java_home)/bin/java" @"$TOOLS/jvm17.args" \
    -Xms"$HEAP" -Xmx"$HEAP" -javaagent:"$jamm" "${jmx[@]}" \
    -Dcassandra.config="file://$DIR/cassandra.yaml" \
    -Dcassandra.storagedir="$DIR" \
    -Dcassandra.logdir="$DIR" \
    -Dcassandra.triggers_dir="$DIR/triggers" \
    -Dcassandra-foreground=yes \
    -Dlogback.configurationFile="$TOOLS/logback.xml" \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.ring_delay_ms=100 \
    -Dcassandra.superuser_setup_delay_ms=0 \
    -Dcassandra.unsafesystem=true \
    -cp "$LIB/*" org.apache.cassandra.service.CassandraDaemon \
    </dev/null >>"$LOG" 2>&1 9>&- &
  echo $! > "$PIDFILE"
}

up() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9                       # two concurrent `up`s: the second waits and then reuses the node
  install
  local pid version t0=$SECONDS
  if pid=$(our_pid); then
    version=$(cql_ready "$READY_TIMEOUT_S" "$pid") || { echo "cassandra: pid $pid is not answering CQL; see $LOG" >&2; exit 1; }
    where "$version"
    return 0
  fi
  rm -f "$PIDFILE"
  if port_open "$PORT"; then
    if version=$(cql_ready 10); then
      echo "cassandra: Cassandra $version already answers on $HOST:$PORT (CQL), started elsewhere; reusing it"
      return 0
    fi
    echo "cassandra: $HOST:$PORT is taken by something that does not answer CQL" >&2
    exit 1
  fi
  fetch
  start
  pid=$(cat "$PIDFILE")
  if ! version=$(cql_ready "$READY_TIMEOUT_S" "$pid"); then
    echo "cassandra: did not become ready (pid $pid); errors from $LOG:" >&2
    sed -n '/^=== start/h; /^=== start/!H; ${x;p}' "$LOG" | grep -E -A3 '^(ERROR|Exception)' | head -n 20 >&2
    exit 1
  fi
  echo "cassandra: started pid $pid, ready in $((SECONDS - t0)) s"
  where "$version"
}

down() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
  local pid i
  if pid=$(our_pid); then
    kill -TERM "$pid"
    for ((i = 0; i < STOP_TIMEOUT_S * 2; i++)); do
      is_node "$pid" || break
      sleep 0.5
    done
    if is_node "$pid"; then
      echo "cassandra: pid $pid ignored SIGTERM for ${STOP_TIMEOUT_S}s; killing it" >&2
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
    fi
  fi
  rm -f "$PIDFILE"
  echo "cassandra: stopped"
}

status() {
  local pid version
  if pid=$(our_pid); then
    if version=$(cql_ready 5 "$pid"); then
      echo "cassandra: running, pid $pid"
      where "$version"
      return 0
    fi
    echo "cassandra: pid $pid is running but not answering CQL yet"
    return 1
  fi
  if port_open "$PORT" && version=$(cql_ready 5); then
    echo "cassandra: Cassandra $version answers on $HOST:$PORT (CQL), started elsewhere"
    return 0
  fi
  echo "cassandra: not running"
  return 1
}

nodetool() {
  if [ -z "$JMX_PORT" ]; then echo "cassandra: JMX is off (BW_CASSANDRA_JMX_PORT is empty)" >&2; exit 1; fi
  exec "$(java_home)/bin/java" @"$TOOLS/jvm17.args" -Xmx256m -cp "$LIB/*" \
    -Dcassandra.logdir="$DIR" -Dlogback.configurationFile="$TOOLS/logback.xml" \
    org.apache.cassandra.tools.NodeTool -h "$HOST" -p "$JMX_PORT" "$@"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  nodetool) shift; nodetool "$@" ;;
  *) echo "usage: $0 up|down|status|nodetool ARGS..." >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Apache Cassandra 5.0, one node, from Maven Central jars on the machine's JDK 17; CQL on 127.0.0.1:9042.
# up: install JDK 17 + Maven if missing, fetch the jars once into .cache/cassandra/lib-<version>,
#     start CassandraDaemon detached with data and log in .run/cassandra, wait until a CQL query
#     through the Python driver succeeds. Idempotent: a running node is reused.
# down: SIGTERM (Cassandra drains), SIGKILL after BW_CASSANDRA_STOP_TIMEOUT_S.  status: exit 0 when CQL answers.
# nodetool ARGS: Cassandra's nodetool over the local-only JMX port.
# up-cluster / down-cluster: a second, separate 3-node cluster ("blackwidow-ring") for the node-loss
#     test, beside the single node: nodes on 127.0.0.2-4, CQL port 9043 on each, storage 7010, JMX
#     7211-7213, 512 MiB heaps, one seed (127.0.0.2), data in .run/cassandra-ring/node{1,2,3}.
#     down-cluster stops them and deletes their data. start-node N / stop-node N act on one node.
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
  [ -n "${RING_TOKEN:-}" ] && sed -i -e "s/^cluster_name: .*/cluster_name: blackwidow-ring/" \
    -e "s/^initial_token: .*/initial_token: $RING_TOKEN/" -e "s/^listen_address: .*/listen_address: $HOST/" \
    -e "s/^rpc_address: .*/rpc_address: $HOST/" -e "s/- seeds: .*/- seeds: \"$RING_SEED:$STORAGE_PORT\"/" \
    "$DIR/cassandra.yaml"
  mkdir -p "$DIR/triggers"
  local jmx=() jamm unsafe=(-Dcassandra.unsafesystem=true)
  # a ring node must survive kill -9 with its schema: its system tables go through the commit log
  [ -n "${RING_TOKEN:-}" ] && unsafe=()
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
    "${unsafe[@]}" \
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

# -- the 3-node cluster -------------------------------------------------------------------------------
RING_DIR=$ROOT/.run/cassandra-ring
RING_SEED=127.0.0.2
# evenly spaced Murmur3 tokens, one per node: no token allocation at first boot
RING_TOKENS=(-9223372036854775808 -3074457345618258603 3074457345618258602)

ring_node() {                     # set the per-node variables of node $1 (1..3)
  local n=$1
  case "$n" in 1|2|3) ;; *) echo "cassandra: node must be 1, 2 or 3, got '$n'" >&2; exit 2 ;; esac
  DIR=$RING_DIR/node$n; PIDFILE=$DIR/cassandra.pid; LOG=$DIR/cassandra.log
  HOST=127.0.0.$((n + 1)); PORT=${BW_CASSANDRA_RING_PORT:-9043}; STORAGE_PORT=7010; JMX_PORT=$((7210 + n))
  HEAP=${BW_CASSANDRA_RING_HEAP:-512M}; RING_TOKEN=${RING_TOKENS[$((n - 1))]}
}

start_node() {
  ring_node "$1"
  mkdir -p "$DIR"
  local pid version t0=$SECONDS
  if pid=$(our_pid); then echo "cassandra: ring node $1 already running, pid $pid"; return 0; fi
  start
  pid=$(cat "$PIDFILE")
  if ! version=$(cql_ready "$READY_TIMEOUT_S" "$pid"); then
    echo "cassandra: ring node $1 did not become ready (pid $pid); see $LOG" >&2
    grep -E -A3 '^(ERROR|Exception)' "$LOG" | head -n 20 >&2
    exit 1
  fi
  echo "cassandra: ring node $1 (pid $pid) ready on $HOST:$PORT in $((SECONDS - t0)) s"
}

stop_node() {
  ring_node "$1"
  local pid i
  if pid=$(our_pid); then
    kill -TERM "$pid"
    for ((i = 0; i < STOP_TIMEOUT_S * 2; i++)); do is_node "$pid" || break; sleep 0.5; done
    is_node "$pid" && kill -KILL "$pid"
  fi
  rm -f "$PIDFILE"
}

up_cluster() {
  mkdir -p "$RING_DIR"
  exec 9>"$RING_DIR/.lock"
  flock 9
  install
  fetch
  local n
  for n in 1 2 3; do start_node "$n"; done        # one after another: the seed first
  "$PY" - "$RING_SEED" "${BW_CASSANDRA_RING_PORT:-9043}" "$READY_TIMEOUT_S" <<'PY'
import sys, time
from cassandra.cluster import Cluster
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + timeout
while True:
    cluster = Cluster([host], port=port, protocol_version=5)
    try:
        session = cluster.connect()
        up = [h for h in cluster.metadata.all_hosts() if h.is_up]
        # the seed seeing two peers is not enough: a node that has not yet learnt the others' tokens coordinates
        # a keyspace at RF 3 as if it were alone; every node must list the other two
        if len(up) == 3 and all(len(list(session.execute("SELECT peer FROM system.peers", host=h))) == 2
                                for h in up):
            print("cassandra: ring of 3 nodes up:", ", ".join(sorted(h.address for h in up)))
            break
    except Exception:
        pass
    finally:
        cluster.shutdown()
    if time.monotonic() > deadline:
        sys.exit("cassandra: the 3 ring nodes did not see each other in time")
    time.sleep(1)
PY
}

down_cluster() {
  mkdir -p "$RING_DIR"
  exec 9>"$RING_DIR/.lock"
  flock 9
  local n
  for n in 3 2 1; do stop_node "$n"; done
  rm -rf "${RING_DIR:?}"/node*
  echo "cassandra: ring stopped, its data deleted"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  nodetool) shift; nodetool "$@" ;;
  up-cluster) up_cluster ;;
  down-cluster) down_cluster ;;
  start-node) start_node "${2:-}" ;;
  stop-node) stop_node "${2:-}" ;;
  *) echo "usage: $0 up|down|status|nodetool ARGS...|up-cluster|down-cluster|start-node N|stop-node N" >&2; exit 2 ;;
esac

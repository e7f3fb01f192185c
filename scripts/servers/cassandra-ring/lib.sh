# Helpers of the three-node Cassandra ring's scripts. Source it; do not run it.
#
# Nodes n1, n2, n3 listen on 127.0.0.2, 127.0.0.3 and 127.0.0.4 (Linux routes all of 127/8
# to the loopback device), each on the same ports as the single test server (CQL 9042,
# internode 7000) but bound to its own address only, so they never collide with the single
# server on 127.0.0.1. Every node is a seed and has a fixed token, so the three start at once
# on an empty ring without bootstrapping (auto_bootstrap: false). JMX is off, as for the
# single server: the scripts and tests stop and start nodes with signals and ask CQL.
#
# Each node's files are in $CHATMEM_SERVERS_RUN/cassandra-ring/NODE and its pid in
# $CHATMEM_SERVERS_RUN/cassandra-ring/NODE.pid. The jars are the single server's
# ($CHATMEM_SERVERS_CACHE/cassandra-$CASSANDRA_VERSION/lib, fetched by
# scripts/servers/cassandra/start.sh); they are fetched here only if that has not happened.

# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

CASSANDRA_VERSION=5.0.9
RING_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN=$CHATMEM_SERVERS_RUN/cassandra-ring
HOME_DIR=$CHATMEM_SERVERS_CACHE/cassandra-$CASSANDRA_VERSION
CQL_PORT=9042
STORAGE_PORT=7000
NODES=(n1 n2 n3)
HEAP=${CHATMEM_CASSANDRA_RING_HEAP:-448M}
TIMEOUT=${CHATMEM_CASSANDRA_RING_TIMEOUT:-300}
KEYSPACE=chatmem_ring
URL="cassandra://127.0.0.2:$CQL_PORT,127.0.0.3:$CQL_PORT,127.0.0.4:$CQL_PORT/$KEYSPACE?create_keyspace=true&replication_factor=3"

addr_of() { echo "127.0.0.$((${1#n} + 1))"; }
# Murmur3 tokens a third of the ring apart: the three nodes own equal ranges (with
# replication factor 3 each holds every row anyway).
token_of() {
  case $1 in
    n1) echo -9223372036854775808 ;;
    n2) echo -3074457345618258603 ;;
    n3) echo 3074457345618258602 ;;
  esac
}

fail() {
  echo "cassandra-ring: $*" >&2
  local node
  for node in "${NODES[@]}"; do
    [[ -f $RUN/$node/logs/stdout.log ]] && { echo "-- $node" >&2; tail -n 20 "$RUN/$node/logs/stdout.log" >&2; }
  done
  exit 1
}

# Cassandra 5.0 runs on Java 11 and 17 only.
find_java17() {
  local c
  for c in "${JAVA_HOME:-/nonexistent}/bin/java" /usr/lib/jvm/java-17-openjdk-*/bin/java "$(command -v java || true)"; do
    if [[ -x $c ]] && "$c" -version 2>&1 | grep -q 'version "17\.'; then
      echo "$c"
      return 0
    fi
  done
  fail "no Java 17 found (set JAVA_HOME to a JDK 17)"
}

# ensure_jars: the single server's jars; fetched from Maven Central only if they are missing,
# under the single server's lock so the two scripts never fetch at the same time.
ensure_jars() {
  [[ -d $HOME_DIR/lib ]] && return 0
  (
    exec 8>"$CHATMEM_SERVERS_RUN/.cassandra.lock"
    flock 8
    [[ -d $HOME_DIR/lib ]] && exit 0
    mkdir -p "$HOME_DIR"
    rm -rf "$HOME_DIR/lib.partial"
    mvn -B -q -f "$RING_HERE/../cassandra/pom.xml" -Dcassandra.version="$CASSANDRA_VERSION" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$HOME_DIR/lib.partial" >"$HOME_DIR/mvn.log" 2>&1 \
      || { cat "$HOME_DIR/mvn.log" >&2; exit 1; }
    mv "$HOME_DIR/lib.partial" "$HOME_DIR/lib"
  ) || fail "Maven could not resolve cassandra-all $CASSANDRA_VERSION"
}

# ours PID NODE: PID is NODE's Cassandra (its command line names NODE's config; not a zombie).
ours() {
  local state
  state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ $state != Z ]] || return 1
  { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -q -- "cassandra.config=file://$RUN/$2/conf/"
}

running() { [[ -f $RUN/$1.pid ]] && ours "$(cat "$RUN/$1.pid")" "$1"; }

# write_config NODE: cassandra.yaml and logback.xml (written on every start; data kept).
write_config() {
  local node=$1 dir=$RUN/$1 addr
  addr=$(addr_of "$node")
  mkdir -p "$dir"/{conf,data,commitlog,saved_caches,hints,cdc_raw,logs,tmp,triggers}
  # commitlog_sync: batch, as production should run: a write is acknowledged only after its
  # commit-log section is marked, and replay reads a segment only up to the last marker. With
  # periodic (markers every ~100 ms) a killed node forgets the writes it acknowledged in its
  # last ~100 ms: with a second node down, a quorum of the ring could then miss them. The
  # fsync is still skipped (-Dcassandra.skip_sync below): a killed process keeps every
  # acknowledged write (the page cache holds it); only a crash of the machine would lose some.
  # CHATMEM_RING_COMMITLOG=periodic starts a node the other way, to measure the difference
  # (benchmarks/ring_node_kill.py).
  local commitlog
  case ${CHATMEM_RING_COMMITLOG:-batch} in
    batch) commitlog='commitlog_sync: batch' ;;
    periodic) commitlog=$'commitlog_sync: periodic\ncommitlog_sync_period: 10000ms' ;;
    *) fail "CHATMEM_RING_COMMITLOG must be batch or periodic, not '$CHATMEM_RING_COMMITLOG'" ;;
  esac
  # Hinted handoff stays on (the default): a restarted node gets the writes it missed.
  cat >"$dir/conf/cassandra.yaml" <<YAML
cluster_name: chatmem-ring
num_tokens: 1
initial_token: $(token_of "$node")
auto_bootstrap: false
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.2:$STORAGE_PORT,127.0.0.3:$STORAGE_PORT,127.0.0.4:$STORAGE_PORT"
listen_address: $addr
rpc_address: $addr
storage_port: $STORAGE_PORT
native_transport_port: $CQL_PORT
start_native_transport: true
data_file_directories:
  - $dir/data
commitlog_directory: $dir/commitlog
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
cdc_raw_directory: $dir/cdc_raw
$commitlog
commitlog_segment_size: 8MiB
auto_snapshot: false
concurrent_compactors: 1
file_cache_size: 32MiB
key_cache_size: 8MiB
YAML
  cat >"$dir/conf/logback.xml" <<'XML'
<configuration scan="false">
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %logger{1} - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="WARN"><appender-ref ref="STDOUT"/></root>
</configuration>
XML
}

# launch NODE: start NODE's JVM detached on the data in place; returns at once.
launch() {
  local node=$1 dir=$RUN/$1 java lib jamm
  java=$(find_java17)
  lib=$HOME_DIR/lib
  jamm=$(compgen -G "$lib/jamm-*.jar" | head -n 1) || fail "no jamm jar in $lib"
  write_config "$node"
  local opts=(
    -Xms128m "-Xmx$HEAP" -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
    -XX:+ExitOnOutOfMemoryError -XX:+PerfDisableSharedMem
    # Two cores for three JVMs: fewer GC and JIT threads, tiered compilation kept.
    -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1 -XX:CICompilerCount=2
    -ea -da:net.openhft...
    -Djava.net.preferIPv4Stack=true
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true
    -Dio.netty.allocator.maxOrder=11
    "-javaagent:$jamm"
    "-Dcassandra.config=file://$dir/conf/cassandra.yaml"
    "-Dcassandra.storagedir=$dir"
    "-Dcassandra.logdir=$dir/logs"
    "-Dcassandra.triggers_dir=$dir/triggers"
    "-Dlogback.configurationFile=$dir/conf/logback.xml"
    -Dcassandra-foreground=true
    "-Djava.io.tmpdir=$dir/tmp"
    # Start speed on an empty test ring: no wait for gossip to settle, no ring delay, no
    # delay before role setup. The tests wait for the peers themselves (ready below).
    -Dcassandra.skip_wait_for_gossip_to_settle=0
    -Dcassandra.ring_delay_ms=0
    -Dcassandra.superuser_setup_delay_ms=0
    -Dcassandra.shutdown_announce_in_ms=0
    # No fsync (throwaway data). Unlike the single server, schema changes ARE flushed
    # (no cassandra.unsafesystem): a node killed and restarted must still know the tables,
    # or it would skip their commit log on replay and lose its replicas.
    -Dcassandra.skip_sync=true
  )
  echo "cassandra-ring: starting $node on $(addr_of "$node"):$CQL_PORT (log: $dir/logs/stdout.log)"
  # 9>&- 8>&-: the server must not inherit a lock.
  nohup "$java" "${opts[@]}" -cp "$dir/conf:$HOME_DIR/lib/*" org.apache.cassandra.service.CassandraDaemon \
    >"$dir/logs/stdout.log" 2>&1 </dev/null 9>&- 8>&- &
  echo $! >"$RUN/$node.pid"
}

# kill_node NODE [SIGNAL]: send SIGNAL (KILL: a crash; TERM: a drain) and wait until it is gone.
kill_node() {
  local node=$1 signal=${2:-KILL} pid i
  running "$node" || { rm -f "$RUN/$node.pid"; return 0; }
  pid=$(cat "$RUN/$node.pid")
  kill "-$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < 1200; i++)); do
    ours "$pid" "$node" || break
    sleep 0.05
  done
  ours "$pid" "$node" && kill -KILL "$pid" 2>/dev/null
  rm -f "$RUN/$node.pid"
}

# ready [NODE...]: wait until every NODE (default: all three) answers CQL on its own address
# and sees the other two as peers; the nodes' pids are watched (an exit fails at once).
ready() {
  local nodes=("${@:-${NODES[@]}}") pids=() node
  for node in "${nodes[@]}"; do pids+=("$node=$(cat "$RUN/$node.pid" 2>/dev/null || echo 0)"); done
  python3 - "$TIMEOUT" "${pids[@]}" <<'PY'
import logging, os, sys, time
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy

logging.disable(logging.CRITICAL)  # the driver logs every refused connection
timeout, nodes = float(sys.argv[1]), [a.split("=") for a in sys.argv[2:]]
deadline = time.monotonic() + timeout
for name, pid in nodes:
    address = f"127.0.0.{int(name[1:]) + 1}"
    error = None
    while True:
        profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([address]))
        cluster = Cluster([address], connect_timeout=5, control_connection_timeout=5,
                          execution_profiles={EXEC_PROFILE_DEFAULT: profile})
        try:
            session = cluster.connect()
            peers = session.execute("SELECT peer FROM system.peers_v2").all()
            if len(peers) == 2:
                break
            error = f"{len(peers)} peers known"
        except Exception as exc:  # NoHostAvailable, timeouts while booting
            error = exc
        finally:
            cluster.shutdown()
        try:
            os.kill(int(pid), 0)
        except OSError:
            sys.exit(f"{name} (pid {pid}) exited")
        if time.monotonic() >= deadline:
            sys.exit(f"{name} not ready within {timeout:.0f}s: {error!r}")
        time.sleep(0.5)
PY
}

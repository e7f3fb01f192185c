#!/usr/bin/env bash
# Start a single-node Apache Cassandra 5.0 for the test suite on
# 127.0.0.1:${CHATMEM_CASSANDRA_PORT:-9042}: no auth, datacenter "datacenter1",
# throwaway data. The jars come from Maven Central (no tarball download is
# possible here) and are cached under $CHATMEM_SERVERS_CACHE.
#
# Environment (all optional):
#   CHATMEM_CASSANDRA_PORT          CQL port (9042)
#   CHATMEM_CASSANDRA_STORAGE_PORT  internode port, bound on 127.0.0.1 (7000)
#   CHATMEM_CASSANDRA_HEAP          max heap (1G)
#   CHATMEM_CASSANDRA_TIMEOUT       seconds to wait for CQL (300)
#   CHATMEM_CASSANDRA_DURABLE=1     an acknowledged write survives a crash of the
#                                   server: commit log synced before the reply, schema
#                                   flushed, fsync on (slower; for durability tests)
#   CHATMEM_KEEP_DATA=1             reuse the data of the previous run (a restart after
#                                   a crash) instead of starting fresh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../common.sh
source "$here/../common.sh"

# Newest 5.0.x on Maven Central when this was written; pom.xml has the same default.
CASSANDRA_VERSION=5.0.9

port=${CHATMEM_CASSANDRA_PORT:-9042}
storage_port=${CHATMEM_CASSANDRA_STORAGE_PORT:-7000}
heap=${CHATMEM_CASSANDRA_HEAP:-1G}
timeout=${CHATMEM_CASSANDRA_TIMEOUT:-300}
home=$CHATMEM_SERVERS_CACHE/cassandra-$CASSANDRA_VERSION
run=$CHATMEM_SERVERS_RUN/cassandra
pidfile=$run/cassandra.pid
log=$run/logs/stdout.log

# Cassandra 5.0 supports Java 11 and 17 only, so do not blindly take the java
# on PATH or JAVA_HOME (a machine may point them at a newer JDK).
find_java17() {
  local c
  for c in "${JAVA_HOME:-/nonexistent}/bin/java" /usr/lib/jvm/java-17-openjdk-*/bin/java "$(command -v java || true)"; do
    if [[ -x $c ]] && "$c" -version 2>&1 | grep -q 'version "17\.'; then
      echo "$c"
      return 0
    fi
  done
  echo "cassandra: no Java 17 found (set JAVA_HOME to a JDK 17)" >&2
  return 1
}

# cql_ready TIMEOUT [PID]: 0 once a CQL query succeeds through the Python driver.
# Gives up early if PID dies. The port opening is not enough: the driver also
# needs system tables and the peer metadata to be readable.
cql_ready() {
  python3 - "$port" "$1" "${2:-}" <<'PY'
import logging, os, sys, time
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy

logging.disable(logging.CRITICAL)  # the driver logs every refused connection
port, timeout, pid = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + timeout
error = None
while True:
    profile = ExecutionProfile(load_balancing_policy=DCAwareRoundRobinPolicy(local_dc="datacenter1"))
    cluster = Cluster(["127.0.0.1"], port=port, connect_timeout=5, control_connection_timeout=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        session = cluster.connect()
        row = session.execute("SELECT release_version, data_center FROM system.local").one()
        print(f"cassandra {row.release_version} ({row.data_center}) answering on 127.0.0.1:{port}")
        sys.exit(0)
    except Exception as exc:  # NoHostAvailable, timeouts, OperationTimedOut while booting
        error = exc
    finally:
        cluster.shutdown()
    if pid:
        try:
            os.kill(int(pid), 0)
        except OSError:
            sys.exit(f"cassandra process {pid} exited")
    if time.monotonic() >= deadline:
        sys.exit(f"cassandra did not answer CQL within {timeout:.0f}s: {error!r}")
    time.sleep(1)
PY
}

fail() {
  echo "cassandra: $*" >&2
  if [[ -f $log ]]; then
    echo "---- last lines of $log ----" >&2
    tail -n 80 "$log" >&2
  fi
  exit 1
}

# The repository tests run writers under libfaketime to show that a writer whose clock is
# off cannot reorder a conversation. Not fatal here: without it only those tests fail (in CI)
# or skip, and the server is still wanted by every other test.
command -v faketime >/dev/null || apt_install faketime ||
  echo "cassandra: could not install faketime; the clock-skew tests will not run" >&2

# One start at a time: a second caller waits here, then finds the server up.
# The lock lives outside $run because a fresh start wipes $run.
exec 9>"$CHATMEM_SERVERS_RUN/.cassandra.lock"
flock 9

if port_open 127.0.0.1 "$port"; then
  # Something already listens: fine if it is a working Cassandra (ours or not).
  if cql_ready 20; then exit 0; fi
  fail "port $port is taken but does not answer CQL"
fi
if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  # Our server is alive but not (yet) listening: a start by someone else that
  # was interrupted, or a hung node. Replace it rather than wait on it.
  echo "cassandra: pid $(cat "$pidfile") is not answering on $port; restarting it"
  stop_pidfile "$pidfile" 60
fi

java=$(find_java17)

# 1) Runtime jars, fetched once per cache. Resolve into a scratch dir and
#    rename it, so an interrupted download is never mistaken for a complete one.
if [[ ! -d $home/lib ]]; then
  echo "cassandra: fetching cassandra-all $CASSANDRA_VERSION and its dependencies from Maven Central"
  mkdir -p "$home"
  rm -rf "$home/lib.partial"
  # Maven's own chatter goes to a file, shown only if resolution fails.
  if ! mvn -B -q -f "$here/pom.xml" -Dcassandra.version="$CASSANDRA_VERSION" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$home/lib.partial" >"$home/mvn.log" 2>&1; then
    cat "$home/mvn.log" >&2
    fail "Maven could not resolve cassandra-all $CASSANDRA_VERSION"
  fi
  mv "$home/lib.partial" "$home/lib"
fi
lib=$home/lib
jamm=$(compgen -G "$lib/jamm-*.jar" | head -n 1) || fail "no jamm jar in $lib"

# 2) Fresh data and config on every real start: tests must not see old state.
#    With CHATMEM_KEEP_DATA=1 the data stays and only the config is written again.
if [[ ${CHATMEM_KEEP_DATA:-0} != 1 || ! -d $run/data ]]; then
  rm -rf "$run"
fi
mkdir -p "$run"/{conf,data,commitlog,saved_caches,hints,cdc_raw,logs,tmp,triggers}

# periodic: a write is acknowledged before its commit-log section is marked, so a
# crash loses up to the last ~100 ms. batch syncs first (and refuses a sync period).
if [[ ${CHATMEM_CASSANDRA_DURABLE:-0} == 1 ]]; then
  commitlog_sync='commitlog_sync: batch'
else
  commitlog_sync=$'commitlog_sync: periodic\ncommitlog_sync_period: 10000ms'
fi

# Only what must be set or differs from the built-in defaults; an unknown
# key aborts startup, so keep this list short. Nothing here turns off SAI or the
# vector type (both on by default in 5.0); materialized views stay off.
cat >"$run/conf/cassandra.yaml" <<EOF
cluster_name: chatmem-test
num_tokens: 1
initial_token: 0
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
# SimpleSnitch reports datacenter "datacenter1", rack "rack1".
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:$storage_port"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: $storage_port
native_transport_port: $port
start_native_transport: true
data_file_directories:
  - $run/data
commitlog_directory: $run/commitlog
saved_caches_directory: $run/saved_caches
hints_directory: $run/hints
cdc_raw_directory: $run/cdc_raw
$commitlog_sync
commitlog_segment_size: 8MiB
# No snapshot on TRUNCATE / DROP: test cleanup is frequent and the data is throwaway.
auto_snapshot: false
hinted_handoff_enabled: false
concurrent_compactors: 1
# Keep off-heap use small; this is a test server next to five others.
file_cache_size: 64MiB
key_cache_size: 16MiB
EOF

# Console only: stdout.log is the one log to read. Cassandra's own INFO lines
# tell what it is doing; third-party libraries only at WARN.
cat >"$run/conf/logback.xml" <<'EOF'
<configuration scan="false">
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %logger{1} - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="WARN"><appender-ref ref="STDOUT"/></root>
</configuration>
EOF

jvm_opts=(
  -Xms256m "-Xmx$heap" -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
  -XX:+ExitOnOutOfMemoryError -XX:+PerfDisableSharedMem
  -ea -da:net.openhft...
  -Djava.net.preferIPv4Stack=true
  # JPMS opens/exports that Cassandra 5.0 needs on Java 17 (its jvm17-server.options).
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
  # jamm measures object sizes for memtable accounting; without the agent 5.0 fails.
  "-javaagent:$jamm"
  "-Dcassandra.config=file://$run/conf/cassandra.yaml"
  "-Dcassandra.storagedir=$run"
  "-Dcassandra.logdir=$run/logs"
  "-Dcassandra.triggers_dir=$run/triggers"
  "-Dlogback.configurationFile=$run/conf/logback.xml"
  # Without it the daemon closes stdout/stderr and the log above stays empty.
  -Dcassandra-foreground=true
  # Native libraries (JNA, lz4, snappy, zstd) unpack here, not in a shared /tmp.
  "-Djava.io.tmpdir=$run/tmp"
  # Test speed: a single node has no gossip to wait for; no delay before role setup.
  -Dcassandra.skip_wait_for_gossip_to_settle=0
  -Dcassandra.ring_delay_ms=0
  -Dcassandra.superuser_setup_delay_ms=0
  # Faster stop: no peers to tell about the shutdown, no messaging to drain.
  -Dcassandra.shutdown_announce_in_ms=0
  -Dcassandra.test.messagingService.nonGracefulShutdown=true
)

# No fsync, and schema changes not flushed to disk (much faster DDL). Not durable:
# after a crash the tables created since the last flush are gone, and the commit
# log's writes to them are skipped on replay.
if [[ ${CHATMEM_CASSANDRA_DURABLE:-0} != 1 ]]; then
  jvm_opts+=(-Dcassandra.unsafesystem=true -Dcassandra.skip_sync=true)
fi

# 3) Launch detached. fd 9 (the lock) is closed for the server, or it would
#    hold the lock for its whole life.
echo "cassandra: starting $CASSANDRA_VERSION on 127.0.0.1:$port (log: $log)"
nohup "$java" "${jvm_opts[@]}" -cp "$run/conf:$lib/*" org.apache.cassandra.service.CassandraDaemon \
  >"$log" 2>&1 </dev/null 9>&- &
echo $! >"$pidfile"

# 4) Ready means: the CQL port is open and a query returns a row.
start=$SECONDS
wait_tcp 127.0.0.1 "$port" "$timeout" "$pidfile" || fail "CQL port $port did not open"
cql_ready $((timeout - (SECONDS - start) + 10)) "$(cat "$pidfile")" || fail "no answer to CQL"
echo "cassandra: ready after $((SECONDS - start)) s (pid $(cat "$pidfile"))"

#!/usr/bin/env bash
# Start Neo4j 5.26 Community, embedded in a small Java launcher
# (Neo4jLauncher.java), for the test suite: Bolt on
# 127.0.0.1:${CHATMEM_NEO4J_PORT:-7687}, no auth, no HTTP, throwaway data.
# The jars come from Maven Central (no tarball download is possible here) and,
# with the compiled launcher, are cached under $CHATMEM_SERVERS_CACHE.
#
# Environment (all optional):
#   CHATMEM_NEO4J_PORT        Bolt port (7687)
#   CHATMEM_NEO4J_HEAP        max heap (768m)
#   CHATMEM_NEO4J_PAGECACHE   page cache in MiB (64)
#   CHATMEM_NEO4J_TIMEOUT     seconds to wait for Bolt (180)
#   CHATMEM_KEEP_DATA=1       reuse the data of the previous run (a restart after a
#                             crash) instead of starting fresh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../common.sh
source "$here/../common.sh"

# Newest 5.26.x (LTS, Java 17) on Maven Central when this was written; pom.xml
# has the same default. The 2025.x+ calendar releases need Java 21.
NEO4J_VERSION=5.26.30

port=${CHATMEM_NEO4J_PORT:-7687}
heap=${CHATMEM_NEO4J_HEAP:-768m}
pagecache_mb=${CHATMEM_NEO4J_PAGECACHE:-64}
timeout=${CHATMEM_NEO4J_TIMEOUT:-180}
home=$CHATMEM_SERVERS_CACHE/neo4j-$NEO4J_VERSION
run=$CHATMEM_SERVERS_RUN/neo4j
pidfile=$run/neo4j.pid
log=$run/stdout.log

# Neo4j 5.26 runs on Java 17 or 21; the launcher is compiled for 17. Prefer a
# JDK 17 over whatever newer one JAVA_HOME or PATH may point at.
find_java17() {
  local c
  for c in "${JAVA_HOME:-/nonexistent}/bin/java" /usr/lib/jvm/java-17-openjdk-*/bin/java "$(command -v java || true)"; do
    if [[ -x $c ]] && "$c" -version 2>&1 | grep -q 'version "17\.'; then
      echo "$c"
      return 0
    fi
  done
  echo "neo4j: no Java 17 found (set JAVA_HOME to a JDK 17)" >&2
  return 1
}

# bolt_ready TIMEOUT [PID]: 0 once `RETURN 1` succeeds through the Python driver
# without credentials. Gives up early if PID dies.
bolt_ready() {
  python3 - "$port" "$1" "${2:-}" <<'PY'
import logging, os, sys, time
from neo4j import GraphDatabase

logging.disable(logging.CRITICAL)
port, timeout, pid = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + timeout
error = None
while True:
    try:
        with GraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=None, connection_timeout=5) as driver:
            records, _, _ = driver.execute_query("RETURN 1 AS one")
            info = driver.get_server_info()
            assert records[0]["one"] == 1
            print(f"neo4j {info.agent} answering on bolt://127.0.0.1:{port}")
            sys.exit(0)
    except Exception as exc:  # ServiceUnavailable while the databases start
        error = exc
    if pid:
        try:
            os.kill(int(pid), 0)
        except OSError:
            sys.exit(f"neo4j process {pid} exited")
    if time.monotonic() >= deadline:
        sys.exit(f"neo4j did not answer on Bolt within {timeout:.0f}s: {error!r}")
    time.sleep(1)
PY
}

fail() {
  echo "neo4j: $*" >&2
  local f
  for f in "$log" "$run/logs/debug.log"; do
    if [[ -f $f ]]; then
      echo "---- last lines of $f ----" >&2
      tail -n 60 "$f" >&2
    fi
  done
  exit 1
}

# One start at a time: a second caller waits here, then finds the server up.
# The lock lives outside $run because a fresh start wipes $run.
exec 9>"$CHATMEM_SERVERS_RUN/.neo4j.lock"
flock 9

if port_open 127.0.0.1 "$port"; then
  # Something already listens: fine if it is a working Neo4j (ours or not).
  if bolt_ready 20; then exit 0; fi
  fail "port $port is taken but does not answer Bolt without auth"
fi
if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  # Our launcher is alive but not listening: an interrupted start or a hung
  # server. Replace it rather than wait on it.
  echo "neo4j: pid $(cat "$pidfile") is not answering on $port; restarting it"
  stop_pidfile "$pidfile" 60
fi

java=$(find_java17)
javac=$(dirname "$java")/javac
[[ -x $javac ]] || fail "no javac next to $java (install the JDK, not only the JRE)"

# 1) Runtime jars, fetched once per cache. Resolve into a scratch dir and
#    rename it, so an interrupted download is never mistaken for a complete one.
if [[ ! -d $home/lib ]]; then
  echo "neo4j: fetching org.neo4j:neo4j $NEO4J_VERSION and its dependencies from Maven Central"
  mkdir -p "$home"
  rm -rf "$home/lib.partial"
  # Maven's own chatter goes to a file, shown only if resolution fails.
  if ! mvn -B -q -f "$here/pom.xml" -Dneo4j.version="$NEO4J_VERSION" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$home/lib.partial" >"$home/mvn.log" 2>&1; then
    cat "$home/mvn.log" >&2
    fail "Maven could not resolve org.neo4j:neo4j $NEO4J_VERSION"
  fi
  mv "$home/lib.partial" "$home/lib"
fi
lib=$home/lib

# 2) The launcher, compiled once per version of its source.
src_sum=$(sha256sum "$here/Neo4jLauncher.java" | cut -d' ' -f1)
classes=$home/launcher-$src_sum
if [[ ! -f $classes/Neo4jLauncher.class ]]; then
  echo "neo4j: compiling Neo4jLauncher.java"
  rm -rf "$classes.partial"
  mkdir -p "$classes.partial"
  "$javac" --release 17 -d "$classes.partial" -cp "$lib/*" "$here/Neo4jLauncher.java" ||
    fail "javac failed"
  rm -rf "$classes"
  mv "$classes.partial" "$classes"
  # Drop launchers compiled from older versions of the source.
  find "$home" -maxdepth 1 -name 'launcher-*' ! -path "$classes" -exec rm -rf {} +
fi

# 3) Fresh data on every real start: tests must not see old state.
#    With CHATMEM_KEEP_DATA=1 the databases stay; Neo4j recovers them from its
#    transaction logs if the last run did not shut down cleanly.
if [[ ${CHATMEM_KEEP_DATA:-0} != 1 || ! -d $run/data ]]; then
  rm -rf "$run"
fi
mkdir -p "$run/tmp"

jvm_opts=(
  -Xms256m "-Xmx$heap" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -XX:-OmitStackTraceInFastThrow
  # The Java 17 part of the JVM options that Neo4j's own server start-up uses.
  --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  -Dio.netty.tryReflectionSetAccessible=true
  -Djdk.nio.maxCachedBufferSize=1024
  -Dlog4j2.disable.jmx=true
  # Netty's native transport unpacks here, not in a shared /tmp.
  "-Djava.io.tmpdir=$run/tmp"
)

# 4) Launch detached. fd 9 (the lock) is closed for the server, or it would
#    hold the lock for its whole life.
echo "neo4j: starting $NEO4J_VERSION on bolt://127.0.0.1:$port (log: $log, $run/logs/debug.log)"
nohup "$java" "${jvm_opts[@]}" -cp "$classes:$lib/*" Neo4jLauncher "$run" "$port" "$pagecache_mb" \
  >"$log" 2>&1 </dev/null 9>&- &
echo $! >"$pidfile"

# 5) Ready means: Bolt is open and `RETURN 1` comes back.
start=$SECONDS
wait_tcp 127.0.0.1 "$port" "$timeout" "$pidfile" || fail "Bolt port $port did not open"
bolt_ready $((timeout - (SECONDS - start) + 10)) "$(cat "$pidfile")" || fail "no answer on Bolt"
echo "neo4j: ready after $((SECONDS - start)) s (pid $(cat "$pidfile"))"

#!/usr/bin/env bash
# Stop the test Neo4j started by start.sh. SIGTERM runs the launcher's
# shutdown hook (clean database shutdown); it is killed if that takes over a
# minute. Exits 0 when it was not running.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../common.sh
source "$here/../common.sh"

pidfile=$CHATMEM_SERVERS_RUN/neo4j/neo4j.pid
if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "neo4j: stopping pid $(cat "$pidfile")"
  stop_pidfile "$pidfile" 60
else
  echo "neo4j: not running"
  rm -f "$pidfile"
fi

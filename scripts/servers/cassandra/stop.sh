#!/usr/bin/env bash
# Stop the test Cassandra started by start.sh. SIGTERM lets it drain (flush
# memtables, close the commit log); it is killed if that takes over a minute.
# Exits 0 when it was not running.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../common.sh
source "$here/../common.sh"

pidfile=$CHATMEM_SERVERS_RUN/cassandra/cassandra.pid
if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "cassandra: stopping pid $(cat "$pidfile")"
  stop_pidfile "$pidfile" 60
else
  echo "cassandra: not running"
  rm -f "$pidfile"
fi

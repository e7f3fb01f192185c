#!/usr/bin/env bash
# Stop both nodes of the primary/standby topology started by start.sh. Exit 0 if they are not
# running. A fast shutdown (SIGINT) ends the sessions the tests keep open.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
lock_file "$RUN/.lock"
stopped=0
for node in "${NODES[@]}"; do
  if running "$node"; then stopped=1; fi
  stop_node "$node"
done
if ((stopped)); then
  echo "postgres-standby: stopped"
else
  echo "postgres-standby: not running"
fi

#!/usr/bin/env bash
# Switch the running primary/standby topology between synchronous and asynchronous
# replication (ALTER SYSTEM on the primary, then a reload; nothing restarts).
#   sync:  synchronous_standby_names = '*', synchronous_commit = on: a commit is acknowledged
#          once the standby has written its WAL.
#   async: synchronous_standby_names = '': a commit is acknowledged at once, streamed after.
#
# Usage: scripts/servers/postgres-standby/mode.sh sync|async
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
MODE=${1:?usage: mode.sh sync|async}
lock_file "$RUN/.lock"
healthy || fail "no healthy primary/standby pair (start.sh starts one)"
set_mode "$MODE"
echo "postgres-standby: $MODE replication, primary $(primary)"

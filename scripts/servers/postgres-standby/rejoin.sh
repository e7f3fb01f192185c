#!/usr/bin/env bash
# After a failover (the standby promoted, the old primary stopped): wipe the node that is not
# the primary, clone it from the primary with pg_basebackup -R, start it as the primary's
# streaming standby, and set the replication mode (the argument, or the one the topology had).
# The roles stay swapped; the URL names both nodes, so clients do not care which is which. A
# healthy pair is left as it is (only the mode is set); without a primary the topology starts
# afresh (start.sh).
#
# Usage: scripts/servers/postgres-standby/rejoin.sh [sync|async]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
t0=$(date +%s.%N)
lock_file "$RUN/.lock"
mode=${1:-$(cat "$RUN/mode" 2>/dev/null || echo async)}
if ! p=$(primary); then
  echo "postgres-standby: no primary; starting afresh" >&2
  exec env CHATMEM_SERVERS_LOCKED=1 "$here/start.sh" "$mode"
fi
if healthy; then
  set_mode "$mode"
  echo "postgres-standby: healthy, primary $p, $mode replication"
  exit 0
fi
standby=$(other_of "$p")
clone "$standby" "$p"
wait_streaming "$p"
set_mode "$mode"
echo "postgres-standby: $standby rejoined as the standby of $p, $mode replication" \
  "($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'))"

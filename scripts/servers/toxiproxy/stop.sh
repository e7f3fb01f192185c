#!/usr/bin/env bash
# Stop the Toxiproxy server started by start.sh (and with it every proxy the tests made).
# Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/toxiproxy
lock_run_dir "$RUN"
# ps truncates command names to 15 characters.
stop_server toxiproxy "$RUN/toxiproxy.pid" toxiproxy-serve TERM 5

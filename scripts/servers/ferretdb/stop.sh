#!/usr/bin/env bash
# Stop the FerretDB launcher started by start.sh. Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/ferretdb
lock_run_dir "$RUN"
# SIGTERM: the launcher closes its listener at once and exits within 0.5 s (main.go,
# -shutdown-grace) even if clients keep connections open. Committed writes are in SQLite's
# WAL, so the files stay valid for start.sh --keep-data. ps truncates command names to 15
# characters.
stop_server ferretdb "$RUN/ferretdb.pid" ferretdb-launch TERM 20

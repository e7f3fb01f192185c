#!/usr/bin/env bash
# Stop the private PostgreSQL started by start.sh. Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/postgres
lock_run_dir "$RUN"
# SIGINT is PostgreSQL's "fast" shutdown: it ends open sessions (tests keep pools open) and
# checkpoints, so the data stays valid for start.sh --keep-data. SIGTERM alone would be a
# "smart" shutdown that waits for every client to disconnect.
stop_server postgres "$RUN/postgres.pid" postgres INT 30

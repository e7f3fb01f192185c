#!/usr/bin/env bash
# Stop the private MariaDB started by start.sh. Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/mariadb
lock_run_dir "$RUN"
# SIGTERM is a normal shutdown for mariadbd: InnoDB flushes and the datadir stays valid for
# start.sh --keep-data.
stop_server mariadb "$RUN/mariadb.pid" mariadbd TERM 60

#!/usr/bin/env bash
# Stop the private MariaDB started by start.sh. Exit 0 if it is not running.
# SIGTERM is a normal shutdown for mariadbd: InnoDB flushes and the datadir stays valid for
# start.sh --keep-data.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
stop_test_server mariadb mariadbd TERM 60

#!/usr/bin/env bash
# Stop the private PostgreSQL started by start.sh. Exit 0 if it is not running.
# SIGINT is PostgreSQL's "fast" shutdown: it ends open sessions (tests keep pools open) and
# checkpoints, so the data stays valid for start.sh --keep-data. SIGTERM alone would be a
# "smart" shutdown that waits for every client to disconnect.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
stop_test_server postgres postgres INT 30

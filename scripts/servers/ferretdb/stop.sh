#!/usr/bin/env bash
# Stop the FerretDB launcher started by start.sh. Exit 0 if it is not running.
# SIGTERM: the launcher closes its listener at once and exits within 0.5 s (main.go,
# -shutdown-grace) even if clients keep connections open. Committed writes are in SQLite's
# WAL, so the files stay valid for start.sh --keep-data. ps truncates command names to 15
# characters.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
stop_test_server ferretdb ferretdb-launch TERM 20

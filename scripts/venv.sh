# Sourced by scripts/demo, scripts/test and scripts/test-pythons: pick the Python environment,
# and install into it exactly the versions uv.lock records; and read a pytest log's result.
#
# Inside an active virtual environment, use it. Otherwise create the project's own, .venv
# (CHATMEM_VENV overrides the path), with the first python3 on PATH, and reuse it on later
# runs: a distribution's Python (Debian, Ubuntu) refuses `pip install` outside a virtual
# environment (PEP 668, "externally-managed-environment"). Afterwards `python3`, `pip` and
# the installed commands (chatmem, ruff, mypy...) are the environment's, first on PATH.

# The uv that reads uv.lock. Installed with pip into the environment, so nothing but PyPI is
# needed; a newer uv may write a lock file an older one cannot read, so it is pinned too.
CHATMEM_UV_VERSION=0.13.9

chatmem_use_venv() {
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "chatmem needs Python 3.11 or newer; python3 is $(python3 --version 2>&1)" >&2
    exit 1
  fi
  if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
    return 0 # already inside a virtual environment
  fi
  local venv=${CHATMEM_VENV:-$PWD/.venv}
  # An environment made from another interpreter (an older layout, or python3 changed on
  # PATH) is made again: the lock installs for the interpreter that runs the tests.
  if [[ -x $venv/bin/python3 ]] && ! cmp -s <(python3 -c 'import sys; print(sys.base_prefix, sys.version)') \
    <("$venv/bin/python3" -c 'import sys; print(sys.base_prefix, sys.version)'); then
    echo "Re-creating $venv for $(command -v python3) ($(python3 --version 2>&1))." >&2
    rm -rf "$venv"
  fi
  if grep -qs '^include-system-site-packages = true' "$venv/pyvenv.cfg"; then
    # Made by an earlier layout that saw the interpreter's own packages: the locked
    # environment sees only what uv.lock installs.
    rm -rf "$venv"
  fi
  if [[ ! -x $venv/bin/python3 ]]; then
    echo "Creating the project's virtual environment in $venv (later runs reuse it)." >&2
    if ! python3 -m venv "$venv"; then
      rm -rf "$venv"
      echo "python3 cannot create a virtual environment; on Debian or Ubuntu:" \
        "apt-get install python3-venv" >&2
      exit 1
    fi
  fi
  export VIRTUAL_ENV=$venv CHATMEM_VENV_CREATED_BY=scripts
  export PATH="$venv/bin:$PATH"
  hash -r
}

# chatmem_install EXTRA [--latest]: install chatmem (editable) with EXTRA into the active
# environment. By default exactly the versions of uv.lock, checked against its hashes, and
# nothing else is removed (an active environment of the user's keeps its other packages).
# With --latest, the newest versions pyproject.toml allows, written back to uv.lock: the way
# to refresh the lock (see docs/development.md).
chatmem_install() {
  local extra=$1 mode=${2:-}
  if [[ $(python3 -m uv --version 2>/dev/null) != "uv $CHATMEM_UV_VERSION"* ]]; then
    python3 -m pip install --quiet --disable-pip-version-check "uv==$CHATMEM_UV_VERSION"
  fi
  local sync=(python3 -m uv sync --active --inexact --quiet --extra "$extra")
  if [[ $mode == --latest ]]; then
    "${sync[@]}" --upgrade
  else
    "${sync[@]}" --locked
  fi
}

# pytest's closing line in the log $1, without its "=" rule: "1 failed, 1250 passed, 871 skipped
# in 92s" (empty if the run ended before it).
chatmem_pytest_result() {
  grep -E '^=* ?[0-9]+ (passed|failed|error)' "$1" | tail -n 1 | tr -d '=' | xargs || true
}

# Sourced by scripts/demo and scripts/test: pick the Python environment to install into.
#
# Inside an active virtual environment, use it. Otherwise create the project's own, .venv
# (CHATMEM_VENV overrides the path), with the first python3 on PATH, and reuse it on later
# runs: a distribution's Python (Debian, Ubuntu) refuses `pip install` outside a virtual
# environment (PEP 668, "externally-managed-environment"). Afterwards `python3`, `pip` and
# the installed commands (chatmem, ruff, mypy...) are the environment's, first on PATH.

chatmem_use_venv() {
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "chatmem needs Python 3.11 or newer; python3 is $(python3 --version 2>&1)" >&2
    exit 1
  fi
  if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
    return 0 # already inside a virtual environment
  fi
  local venv=${CHATMEM_VENV:-$PWD/.venv}
  if [[ ! -x $venv/bin/python3 ]]; then
    echo "Creating the project's virtual environment in $venv (later runs reuse it)." >&2
    # --system-site-packages: what this python3 already has is not downloaded again; pip
    # still installs into the environment whatever is missing or too old.
    if ! python3 -m venv --system-site-packages "$venv"; then
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

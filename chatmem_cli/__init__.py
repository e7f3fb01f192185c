"""The ``chatmem`` command line: inspect, move and maintain stored conversations.

Commands: ``conversations``, ``show``, ``delete``, ``erase``, ``export``, ``import``,
``migrate``, ``prune``, ``doctor``, ``chat``, ``demo``, ``keys generate`` and ``keys rotate``.
Every command that opens a repository takes ``--url``; without it the repository comes from
``CHATMEM_REPOSITORY_URL`` (or a ``.env`` file), else an embedded SQLite file in the user's data
directory. Needs the ``cli`` extra (``pip install "chatmem[cli]"``).

Example:
    ```console
    $ chatmem demo
    $ chatmem conversations --owner alice
    $ chatmem migrate sqlite:///chat.db postgresql+psycopg://app@db/app
    ```
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]

# The packages of the ``cli`` extra; a base install has none of them.
_CLI_MODULES = ("typer", "rich", "platformdirs", "pydantic_settings")


def _missing_extra() -> str | None:
    for name in _CLI_MODULES:
        try:
            __import__(name)
        except ModuleNotFoundError:
            return name
    return None


def __getattr__(name: str) -> Any:
    if name == "app":
        from chatmem_cli._commands import app

        return app
    raise AttributeError(f"module 'chatmem_cli' has no attribute {name!r}")


def main() -> None:
    """Run the ``chatmem`` command line (or say which extra to install, in one line)."""
    missing = _missing_extra()
    if missing is not None:
        print(
            f"error: the chatmem command needs its extra ({missing} is not installed): "
            'pip install "chatmem[cli]"',
            file=sys.stderr,
        )
        raise SystemExit(1)
    from chatmem_cli._commands import main as run

    run()

"""The ``chatmem`` command line: inspect, move and maintain stored conversations.

Commands: ``conversations``, ``show``, ``export``, ``import``, ``migrate``, ``prune``,
``doctor``, ``chat`` and ``demo``. Every command takes ``--url``; without it the repository
comes from ``CHATMEM_REPOSITORY_URL`` (or a ``.env`` file), else an embedded SQLite file in
the user's data directory.

Example:
    ```console
    $ chatmem demo
    $ chatmem conversations --owner alice
    $ chatmem migrate sqlite:///chat.db postgresql+psycopg://app@db/app
    ```
"""

from chatmem_cli._app import app, main

__all__ = ["app", "main"]

"""Closing a session's connection when its statement outlives ``read_timeout``.

The Neo4j driver reads without a timeout unless the server sends the
``connection.recv_timeout_seconds`` hint (Neo4j 5 sends 120 s by default), so a server that
stops answering keeps a statement waiting for minutes. The repository arms a deadline
(:mod:`chatmem_repositories._deadline`) around each statement; when it passes, the socket
of the connection the session holds is shut down, and the driver's pending read fails at once
with its ordinary "connection lost" error (the connection is discarded).

The driver has no public way to reach that socket, so it is found through the session's
connection attributes; if a driver release renames them, the deadline finds nothing to shut
and the driver's own bound (the server's hint) applies again.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from typing import Any

from chatmem_repositories._deadline import shutdown_socket

__all__ = ["closer_of"]


def _fd_of(session: Any) -> int | None:
    connection = getattr(session, "_connection", None)
    bolt_socket = getattr(connection, "socket", None)
    raw = getattr(bolt_socket, "_socket", None)  # the blocking driver's socket.socket
    if raw is None:
        writer = getattr(bolt_socket, "_writer", None)  # the async driver's stream writer
        raw = None if writer is None else writer.get_extra_info("socket")
    fileno = getattr(raw, "fileno", None)
    fd = fileno() if callable(fileno) else -1
    return fd if isinstance(fd, int) and fd >= 0 else None


def closer_of(session: Any) -> Callable[[], bool]:
    """Return an action that shuts down the socket the session's connection uses then.

    The action returns ``False`` if the session holds no connection yet (it is still
    waiting for one, which ``connection_acquisition_timeout`` bounds).

    Args:
        session: A driver session (blocking or async); it holds one connection while a
            statement runs.
    """

    def close() -> bool:
        fd = _fd_of(session)
        if fd is None:
            return False
        # A duplicate descriptor: never call into the driver's objects from this thread.
        with contextlib.suppress(OSError):
            duplicate = socket.socket(fileno=os.dup(fd))
            try:
                shutdown_socket(duplicate)
            finally:
                duplicate.close()
        return True

    return close

"""Deadlines for drivers that wait for a reply forever: close the connection's socket.

psycopg, aiomysql and the Neo4j driver have no read timeout of their own: a server that
accepts a request and never answers (a frozen process, a proxy holding the bytes) keeps a
call waiting forever. TCP keepalives do not help, because the peer's kernel (or the proxy)
still acknowledges. So the repository arms a :class:`Deadline` before it waits, and if the
answer has not come when it expires, the watchdog shuts the socket down. The driver's
pending read then ends at once with an ordinary "connection closed" error, which every
layer above already handles (the connection is discarded, never reused), and the repository
reports a timeout because :attr:`Deadline.expired` is set.

Shutting the socket down works the same under a blocking call and under an event loop (the
loop sees the end of the stream), so both twins share this one mechanism and no cancellation
has to travel through a driver. One daemon thread serves every deadline of the process;
arming and cancelling one are a heap push and a flag under a lock.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import socket
import threading
import time
from collections.abc import Callable

__all__ = ["Deadline", "arm", "arm_socket", "shutdown_socket"]

_COMPACT_MIN = 1024


class Deadline:
    """A pending deadline; :meth:`cancel` it once the answer came.

    Attributes:
        seconds: How long it was armed for.
    """

    __slots__ = ("_action", "_lock", "_release", "_state", "seconds")

    def __init__(
        self,
        seconds: float,
        action: Callable[[], object],
        *,
        release: Callable[[], None] | None = None,
    ) -> None:
        self.seconds = seconds
        self._action = action
        self._release = release
        self._lock = threading.Lock()
        self._state = "armed"

    @property
    def expired(self) -> bool:
        """Whether the deadline passed and its action ran (the connection was shut down)."""
        return self._state == "expired"

    def cancel(self) -> None:
        """Disarm it; once this returns, the action has either run or never will."""
        with self._lock:
            if self._state == "armed":
                self._state = "cancelled"
                self._done()

    @property
    def state(self) -> str:
        """``"armed"``, ``"cancelled"`` or ``"expired"``."""
        return self._state

    def fire(self) -> None:
        """Run the action now unless the deadline was cancelled (the watchdog calls this)."""
        with self._lock:
            # Under the lock: cancel() must not return while the socket is being shut.
            if self._state == "armed":
                done: object = False
                with contextlib.suppress(Exception):
                    done = self._action()
                # An action that found nothing to act on returns False: not expired then.
                self._state = "cancelled" if done is False else "expired"
                self._done()

    def _done(self) -> None:
        if self._release is not None:
            with contextlib.suppress(Exception):
                self._release()


class _Watchdog:
    """One daemon thread that fires deadlines in time order."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._next_wake = math.inf
        self._compact_at = _COMPACT_MIN

    def add(self, deadline: Deadline) -> None:
        due = time.monotonic() + deadline.seconds
        with self._wake:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="chatmem-deadlines", daemon=True
                )
                self._thread.start()
            if len(self._heap) >= self._compact_at:
                # Cancelled deadlines stay until due (so the thread wakes about once per
                # timeout, not once per call); drop them when they pile up.
                self._heap = [entry for entry in self._heap if entry[2].state == "armed"]
                heapq.heapify(self._heap)
                self._compact_at = max(_COMPACT_MIN, 2 * len(self._heap))
            heapq.heappush(self._heap, (due, next(self._order), deadline))
            if due < self._next_wake:
                self._next_wake = due
                self._wake.notify()

    def _run(self) -> None:
        while True:
            due_now: list[Deadline] = []
            with self._wake:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    due_now.append(heapq.heappop(self._heap)[2])
                if not due_now:
                    self._next_wake = self._heap[0][0] if self._heap else math.inf
                    self._wake.wait(None if not self._heap else self._next_wake - now)
                    continue
            for deadline in due_now:
                deadline.fire()


_watchdog = _Watchdog()


def arm(seconds: float, action: Callable[[], object]) -> Deadline:
    """Run ``action`` (on the watchdog thread) in ``seconds`` unless cancelled first.

    Args:
        seconds: The time allowed.
        action: What to do when it passes, such as shutting down the socket the driver is
            reading from at that moment. It returns ``False`` if it found nothing to do
            (then the deadline does not count as expired); its exceptions are ignored.
    """
    deadline = Deadline(seconds, action)
    _watchdog.add(deadline)
    return deadline


def arm_socket(seconds: float, fd: int) -> Deadline:
    """Shut down the socket behind ``fd`` in ``seconds`` unless cancelled first.

    The descriptor is duplicated now, so the shutdown reaches this very connection even if
    the driver closes ``fd`` (and the number is reused) before the deadline passes; the
    duplicate is released when the deadline is cancelled or has fired.

    Args:
        seconds: The time allowed.
        fd: The driver's socket descriptor.
    """
    duplicate = os.dup(fd)

    def shut_down() -> None:
        # A socket object only when needed: arming stays a dup(2) and a heap push.
        sock = socket.socket(fileno=duplicate)
        try:
            shutdown_socket(sock)
        finally:
            sock.detach()  # the duplicate is closed by release, exactly once

    deadline = Deadline(seconds, shut_down, release=lambda: os.close(duplicate))
    _watchdog.add(deadline)
    return deadline


def shutdown_socket(sock: socket.socket) -> None:
    """Shut a socket down in both directions, ignoring a socket that is already closed."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)

"""A bounded, ordered thread pool for sync work (the twins' helpers are in ``_twins``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_in_order"]

T = TypeVar("T")
R = TypeVar("R")


def run_in_order(
    items: Iterable[T],
    work: Callable[[T], R],
    done: Callable[[T, R], Any],
    *,
    workers: int,
    key: Callable[[T], Hashable],
) -> None:
    """Run ``work`` on items in ``workers`` threads; hand each result to ``done`` in order.

    Items are read ahead at most twice ``workers`` at a time (memory stays bounded, so
    ``items`` may be a long stream), two items with the same ``key`` never run at once (the
    later one waits, so a conversation's parts are written in order), and ``done`` runs on
    the calling thread with each item and its result, in the items' order. The first
    failure is raised once the items already started have finished. With one worker the
    items run one after another on the calling thread.

    Example:
        ```python
        run_in_order(ids, copy_one, report, workers=4, key=lambda cid: cid)
        ```

    Args:
        items: What to work on.
        work: Called with each item, on a worker thread.
        done: Called with each item and what ``work`` returned for it.
        workers: Threads working at once (at least 1).
        key: Items with equal keys never run at the same time.
    """
    if workers == 1:
        for item in items:
            done(item, work(item))
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="chatmem-in-order")
    pending: deque[tuple[T, Hashable, Future[R]]] = deque()

    def finish_first() -> None:
        item, _, future = pending.popleft()
        done(item, future.result())

    try:
        for item in items:
            name = key(item)
            while pending and (
                len(pending) >= 2 * workers
                or pending[0][2].done()
                or any(other == name for _, other, _ in pending)
            ):
                finish_first()
            pending.append((item, name, pool.submit(work, item)))
        while pending:
            finish_first()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

"""``bulk``: bulk appends, what ``chatmem migrate`` and ``chatmem import`` do to a destination.

A ``memory://`` source holds ``--sizes`` messages in conversations of 50 (user and assistant
alternating, 200 characters). Into a store of the run's own (a new table, key or collection
prefix) the scenario times, in one run:

- ``migrate``: ``migrate(source, destination, verify=True)``, what the command runs, end to end;
- ``no-op re-run``: the same again; every message is skipped by id (idempotent append);
- ``append``: the destination alone, every conversation appended again into fresh ids in pages
  of 500 (no source reads, no verification).

Each is recorded with its messages per second.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.harness import Run, backend_of, history, repository_options, scenario
from benchmarks.scenarios.storage import PREFIX_OPTION, SIZES
from chatmem import InMemoryChatMemoryRepository
from chatmem_cli._transfer_engine import migrate
from chatmem_repositories import create_repository

PER_CONVERSATION = 50
PAGE = 500


def _timed(action: Callable[[], Any]) -> tuple[Any, float]:
    began = time.perf_counter()
    result = action()
    return result, time.perf_counter() - began


@scenario("bulk", backends=("sqlite", "postgresql", "redis"), sizes=(20_000,))
def bulk(run: Run) -> None:
    """Messages per second of migrate, its no-op re-run, and plain paged appends."""
    assert run.url
    backend = backend_of(run.url)
    total = run.sizes[-1]
    source = InMemoryChatMemoryRepository()
    conversations = [f"bulk-{i}" for i in range(max(1, total // PER_CONVERSATION))]
    for cid in conversations:
        source.append(cid, history(PER_CONVERSATION))
    messages = PER_CONVERSATION * len(conversations)
    prefix = f"bk{uuid.uuid4().hex[:6]}_"
    options = {**repository_options(run.url)}
    if backend in PREFIX_OPTION:
        options[PREFIX_OPTION[backend]] = prefix
    destination = create_repository(run.url, **options)
    params = {"messages": messages, "per_conversation": PER_CONVERSATION}
    try:
        report, took = _timed(lambda: migrate(source, destination, verify=True))
        assert report.stored == messages, report
        run.record({**params, "step": "migrate"}, results={"msgs_per_s": round(messages / took)})
        report, took = _timed(lambda: migrate(source, destination, verify=True))
        assert report.stored == 0, report
        run.record(
            {**params, "step": "no-op re-run"}, results={"msgs_per_s": round(messages / took)}
        )

        def append_all() -> None:
            for cid in conversations:
                stored = source.find_by_conversation_id(cid)
                fresh = history(len(stored))  # new ids: every message is stored again
                for at in range(0, len(fresh), PAGE):
                    destination.append(f"{cid}-again", fresh[at : at + PAGE])

        _, took = _timed(append_all)
        run.record({**params, "step": "append"}, results={"msgs_per_s": round(messages / took)})
    finally:
        for cid in conversations:
            destination.delete_by_conversation_id(cid)
            destination.delete_by_conversation_id(f"{cid}-again")
        destination.close()
        if backend in SIZES and backend != "sqlite":
            SIZES[backend](run.url, prefix, True)

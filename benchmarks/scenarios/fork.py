"""``fork``: what a fork costs against the length of its parent, in time and messages stored.

Fills one parent conversation per size (a system message first, 200-character messages), then
forks it ``--turns`` times at its newest message and at its middle, each into a new id. A fork
stores the parent's system message and its newest ``fork_carry`` (500) messages up to the fork
point, so both numbers should stay flat as the parent grows.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from benchmarks.harness import Run, chunks, history, repository_options, scenario
from chatmem import Message, Sessions, SystemMessage
from chatmem_repositories import create_repository

CARRY = 500


def _fill(sessions: Sessions, conversation_id: str, length: int) -> list[Any]:
    messages: list[Message] = [SystemMessage("be brief"), *history(max(0, length - 1))]
    positions: list[Any] = []
    for chunk in chunks(messages):
        positions += [stored.position for stored in sessions.append(conversation_id, chunk)]
    return positions[1:]


@scenario("fork", backends=("memory", "sqlite", "postgresql"), sizes=(10, 10000), turns=5)
def fork(run: Run) -> None:
    """Time and messages stored per fork, at the newest message and at the middle."""
    assert run.url
    repository = create_repository(run.url, **repository_options(run.url))
    sessions = Sessions(repository, fork_carry=CARRY)
    try:
        for length in run.sizes:
            parent = f"fork-{uuid.uuid4().hex[:8]}"
            positions = _fill(sessions, parent, length)
            for point, at in (("newest", None), ("middle", positions[len(positions) // 2])):
                times: list[float] = []
                stored: list[int] = []
                for _ in range(run.turns):
                    child = f"{parent}-{uuid.uuid4().hex[:8]}"
                    began = time.perf_counter()
                    sessions.fork(parent, child, at=at)
                    times.append((time.perf_counter() - began) * 1000)
                    stored.append(len(repository.find_by_conversation_id(child)))
                    repository.delete_by_conversation_id(child)
                run.record(
                    {"n": length, "point": point, "fork_carry": CARRY},
                    times,
                    results={"messages_stored": max(stored)},
                )
            repository.delete_by_conversation_id(parent)
    finally:
        repository.close()

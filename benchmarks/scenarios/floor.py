"""``floor``: chatmem's turn against the floor, the same driver doing the least a turn needs.

The chatmem turn is the ``turns`` scenario's (get with a window of 20, one add of the user
message and the answer). The floor (``_floor_drivers``) is one indexed read of the newest 20
rows of one conversation and one round trip inserting two, with the same driver and connection
settings. Both fill a conversation of each length first; then turns are measured round-robin,
alternating which of the two goes first, so machine noise hits both alike: the ratio
chatmem / floor is measured side by side in one run.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from typing import Any

from benchmarks.harness import TEXT, Run, chunks, history, repository_options, scenario
from benchmarks.scenarios._floor_drivers import floor_for
from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository

Samples = dict[str, dict[int, list[float]]]


def _empty(run: Run) -> Samples:
    return {"chatmem": {n: [] for n in run.sizes}, "floor": {n: [] for n in run.sizes}}


def _sync(run: Run) -> Samples:
    assert run.url
    repository = create_repository(run.url, **repository_options(run.url))
    memory = MessageWindowChatMemory(repository, max_messages=20)
    floor: Any = None
    ids = {n: f"floor-{n}-{uuid.uuid4().hex[:8]}" for n in run.sizes}
    samples = _empty(run)
    try:
        for n, cid in ids.items():
            for chunk in chunks(history(n)):
                repository.append(cid, chunk)
        floor = floor_for(run.url, is_async=False)  # after chatmem created its schema
        for n, cid in ids.items():
            floor.fill(cid, n)
        for turn in range(run.warmup + run.turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                for which in ("chatmem", "floor") if turn % 2 == 0 else ("floor", "chatmem"):
                    began = time.perf_counter()
                    if which == "chatmem":
                        memory.get(cid)
                        memory.add(cid, [user, answer])
                    else:
                        floor.turn(cid)
                    if turn >= run.warmup:
                        samples[which][n].append((time.perf_counter() - began) * 1000)
    finally:
        for cid in ids.values():
            repository.delete_by_conversation_id(cid)
        repository.close()
        if floor is not None:
            floor.close()
    return samples


async def _async(run: Run) -> Samples:
    assert run.url
    repository = create_async_repository(run.url, **repository_options(run.url))
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    floor: Any = None
    ids = {n: f"floor-{n}-{uuid.uuid4().hex[:8]}" for n in run.sizes}
    samples = _empty(run)
    try:
        for n, cid in ids.items():
            for chunk in chunks(history(n)):
                await repository.append(cid, chunk)
        floor = floor_for(run.url, is_async=True)
        for n, cid in ids.items():
            await floor.fill(cid, n)
        for turn in range(run.warmup + run.turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                for which in ("chatmem", "floor") if turn % 2 == 0 else ("floor", "chatmem"):
                    began = time.perf_counter()
                    if which == "chatmem":
                        await memory.get(cid)
                        await memory.add(cid, [user, answer])
                    else:
                        await floor.turn(cid)
                    if turn >= run.warmup:
                        samples[which][n].append((time.perf_counter() - began) * 1000)
    finally:
        for cid in ids.values():
            await repository.delete_by_conversation_id(cid)
        await repository.aclose()
        if floor is not None:
            await floor.close()
    return samples


@scenario(
    "floor",
    backends=("memory", "sqlite", "postgresql", "redis"),
    sizes=(10, 1000, 10000),
    turns=200,
)
def floor(run: Run) -> None:
    """chatmem's turn against the same driver doing the least a turn needs (ratio in one run)."""
    samples = asyncio.run(_async(run)) if run.is_async else _sync(run)
    for n in run.sizes:
        ours, bare = samples["chatmem"][n], samples["floor"][n]
        run.record(
            {"n": n},
            ours,
            results={
                "floor_ms": round(statistics.median(bare), 4),
                "ratio": round(statistics.median(ours) / statistics.median(bare), 3),
                "floor_samples_ms": bare,
            },
        )

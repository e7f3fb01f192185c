"""``turns``: per-turn memory cost against stored history length.

A turn is what MessageChatMemoryAdvisor does per request through MessageWindowChatMemory
(window of 20): ``get``, then one ``add`` of the user message and the answer, 200-character
messages. A conversation of each length is filled first; then turns are measured round-robin
across the lengths, so machine noise hits them alike and the ratio of the cost at N to the cost
at the smallest length is measured side by side in one run.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from benchmarks.harness import TEXT, Run, chunks, history, repository_options, scenario
from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository

WINDOW = 20


def _record(run: Run, samples: dict[int, list[float]]) -> None:
    base = sorted(samples[min(samples)])[len(samples[min(samples)]) // 2]
    for n, values in samples.items():
        median = sorted(values)[len(values) // 2]
        run.record({"n": n, "window": WINDOW}, values, results={"ratio": round(median / base, 3)})


def _sync(run: Run) -> dict[int, list[float]]:
    assert run.url
    repository = create_repository(run.url, **repository_options(run.url))
    memory = MessageWindowChatMemory(repository, max_messages=WINDOW)
    ids = {n: f"turns-{n}-{uuid.uuid4().hex[:8]}" for n in run.sizes}
    samples: dict[int, list[float]] = {n: [] for n in run.sizes}
    try:
        for n, cid in ids.items():
            for chunk in chunks(history(n)):
                repository.append(cid, chunk)
        for turn in range(run.warmup + run.turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                began = time.perf_counter()
                memory.get(cid)
                memory.add(cid, [user, answer])
                if turn >= run.warmup:
                    samples[n].append((time.perf_counter() - began) * 1000)
    finally:
        for cid in ids.values():
            repository.delete_by_conversation_id(cid)
        repository.close()
    return samples


async def _async(run: Run) -> dict[int, list[float]]:
    assert run.url
    repository = create_async_repository(run.url, **repository_options(run.url))
    memory = AsyncMessageWindowChatMemory(repository, max_messages=WINDOW)
    ids = {n: f"turns-{n}-{uuid.uuid4().hex[:8]}" for n in run.sizes}
    samples: dict[int, list[float]] = {n: [] for n in run.sizes}
    try:
        for n, cid in ids.items():
            for chunk in chunks(history(n)):
                await repository.append(cid, chunk)
        for turn in range(run.warmup + run.turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                began = time.perf_counter()
                await memory.get(cid)
                await memory.add(cid, [user, answer])
                if turn >= run.warmup:
                    samples[n].append((time.perf_counter() - began) * 1000)
    finally:
        for cid in ids.values():
            await repository.delete_by_conversation_id(cid)
        await repository.aclose()
    return samples


@scenario(
    "turns",
    backends=("memory", "sqlite", "postgresql", "redis"),
    sizes=(10, 1000, 10000),
    turns=200,
)
def turns(run: Run) -> None:
    """Per-turn cost (get + one add of two messages) against stored history length."""
    _record(run, asyncio.run(_async(run)) if run.is_async else _sync(run))

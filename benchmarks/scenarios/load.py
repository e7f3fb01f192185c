"""``load``: throughput under concurrent load, many clients doing turns on many conversations.

Each client (a thread for the sync repository, a task for the async one; all share one
repository and one MessageWindowChatMemory, as a service would) loops for ``--duration``
seconds: pick one of 1,000 conversation ids at random, then do a turn (get with a window of 20,
one add of the user message and the answer). One record per client count: the turn latencies
as samples, turns per second and the CPU this process used (near 1.0 core: the client is bound
by its own GIL, not by the server).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid

from benchmarks.harness import TEXT, Run, repository_options, scenario
from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository

CONVERSATIONS = 1000


def _pair(i: int) -> list[UserMessage | AssistantMessage]:
    return [UserMessage(f"q{i} {TEXT}"[:200]), AssistantMessage(TEXT)]


def _sync_level(
    run: Run, memory: MessageWindowChatMemory, ids: list[str], clients: int, used: set[str]
) -> list[float]:
    stop = time.perf_counter() + run.duration
    latencies: list[list[float]] = [[] for _ in range(clients)]

    def client(mine: list[float]) -> None:
        rng = random.Random()
        while time.perf_counter() < stop:
            cid = rng.choice(ids)
            used.add(cid)
            began = time.perf_counter()
            memory.get(cid)
            memory.add(cid, _pair(len(mine)))
            mine.append((time.perf_counter() - began) * 1000)

    threads = [threading.Thread(target=client, args=(mine,)) for mine in latencies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [value for mine in latencies for value in mine]


async def _async_level(
    run: Run, memory: AsyncMessageWindowChatMemory, ids: list[str], clients: int, used: set[str]
) -> list[float]:
    stop = time.perf_counter() + run.duration

    async def client() -> list[float]:
        rng, mine = random.Random(), []
        while time.perf_counter() < stop:
            cid = rng.choice(ids)
            used.add(cid)
            began = time.perf_counter()
            await memory.get(cid)
            await memory.add(cid, _pair(len(mine)))
            mine.append((time.perf_counter() - began) * 1000)
        return mine

    done = await asyncio.gather(*(client() for _ in range(clients)))
    return [value for mine in done for value in mine]


def _record(run: Run, clients: int, latencies: list[float], cpu: float) -> None:
    run.record(
        {"clients": clients, "conversations": CONVERSATIONS, "duration_s": run.duration},
        latencies,
        results={
            "turns_per_s": round(len(latencies) / run.duration, 1),
            "client_cpu_cores": round(cpu / run.duration, 2),
        },
    )


async def _run_async(run: Run, ids: list[str], used: set[str]) -> None:
    assert run.url
    repository = create_async_repository(run.url, **repository_options(run.url))
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    try:
        for clients in run.clients:
            cpu = time.process_time()
            latencies = await _async_level(run, memory, ids, clients, used)
            _record(run, clients, latencies, time.process_time() - cpu)
    finally:
        for cid in used:  # only those a turn created
            await repository.delete_by_conversation_id(cid)
        await repository.aclose()


@scenario(
    "load", backends=("memory", "sqlite", "postgresql", "redis"), clients=(1, 4, 16), duration=5
)
def load(run: Run) -> None:
    """Turns per second and turn latency as concurrent clients grow (threads or tasks)."""
    assert run.url
    ids = [f"load-{uuid.uuid4().hex[:8]}-{i}" for i in range(CONVERSATIONS)]
    used: set[str] = set()
    if run.is_async:
        asyncio.run(_run_async(run, ids, used))
        return
    repository = create_repository(run.url, **repository_options(run.url))
    memory = MessageWindowChatMemory(repository, max_messages=20)
    try:
        for clients in run.clients:
            cpu = time.process_time()
            latencies = _sync_level(run, memory, ids, clients, used)
            _record(run, clients, latencies, time.process_time() - cpu)
    finally:
        for cid in used:  # only those a turn created
            repository.delete_by_conversation_id(cid)
        repository.close()

"""Redis Cluster under change: a slot moved while 8 writers append, a master killed (SIGKILL).

Each test prints what it measured (run with ``-s`` to see it). Resharding must lose and
duplicate nothing: redis-py follows MOVED and ASK, and a script refused with TRYAGAIN while
its slot is half migrated is sent again (appends are idempotent by message id). A failover may
lose appends that the master acknowledged but had not yet sent to its replica (Redis
replicates asynchronously): the test counts them; it must duplicate nothing, and every write
must succeed again once the replica has taken over.

The failover tests come last in this file and put the cluster back as it was (the killed
node restarts, rejoins as a replica and takes its master role back with CLUSTER FAILOVER), so
they cannot break other tests.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from chatmem import UserMessage
from chatmem.exceptions import RepositoryError
from chatmem.messages import Message
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository
from chatmem_repositories.redis._options import cluster_seeds
from chatmem_repositories.redis._schema import KeyLayout
from tests.support.polling import async_wait_until

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts" / "servers" / "redis-cluster"
RUN = Path(os.environ.get("CHATMEM_SERVERS_RUN", "/tmp/chatmem-servers")) / "redis-cluster"
PREFIX = f"chatmem-faults-{uuid.uuid4().hex[:8]}"
WRITERS = 8
GIVE_UP = 60.0  # seconds a writer keeps sending one append before the test fails


@dataclass(frozen=True)
class Node:
    id: str
    port: int
    master: bool
    master_id: str
    slots: tuple[tuple[int, int], ...]


def cluster_nodes(port: int) -> list[Node]:
    """The cluster as one node sees it (CLUSTER NODES)."""
    with redis.Redis(port=port, socket_timeout=5) as raw:
        text = raw.execute_command("CLUSTER", "NODES").decode()
    nodes = []
    for line in text.splitlines():
        fields = line.split()
        if "fail" in fields[2].split(",") or "noaddr" in fields[2]:
            continue
        slots = []
        for item in fields[8:]:
            if item.startswith("["):
                continue  # a migration in progress
            low, _, high = item.partition("-")
            slots.append((int(low), int(high or low)))
        nodes.append(
            Node(
                id=fields[0],
                port=int(fields[1].split("@")[0].rsplit(":", 1)[1]),
                master="master" in fields[2],
                master_id=fields[3],
                slots=tuple(slots),
            )
        )
    return nodes


def owner(slot: int, port: int) -> Node:
    found = served_by(slot, port)
    assert found is not None, f"slot {slot} has no master"
    return found


def served_by(slot: int, port: int) -> Node | None:
    """The master serving ``slot`` (``None`` while its failed master is not yet replaced)."""
    return next((n for n in cluster_nodes(port) if any(a <= slot <= b for a, b in n.slots)), None)


def taken_over(slot: int, port: int, killed: Node) -> bool:
    master = served_by(slot, port)
    return master is not None and master.id != killed.id


def healthy(port: int) -> bool:
    try:
        with redis.Redis(port=port, socket_timeout=2) as raw:
            info = raw.execute_command("CLUSTER", "INFO").decode()
    except redis.RedisError:
        return False
    return "cluster_state:ok" in info and "cluster_slots_ok:16384" in info


def wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def redirections(masters: list[Node]) -> dict[str, int]:
    """How many MOVED, ASK and TRYAGAIN replies the masters have sent (INFO errorstats)."""
    totals = {"MOVED": 0, "ASK": 0, "TRYAGAIN": 0}
    for node in masters:
        with redis.Redis(port=node.port, socket_timeout=5) as raw:
            stats = raw.info("errorstats")
        for name in totals:
            totals[name] += int(stats.get(f"errorstat_{name}", {}).get("count", 0))
    return totals


def report_redirections(before: dict[str, int], after: dict[str, int]) -> None:
    seen = {name: after[name] - before[name] for name in before}
    print("\nreplies during the move: " + ", ".join(f"{n} {c}" for n, c in seen.items()))
    assert seen["MOVED"] + seen["ASK"] > 0  # the writers did meet the move


def busy_conversation() -> tuple[str, int]:
    conversation_id = f"busy-{uuid.uuid4().hex[:8]}"
    tag = KeyLayout(PREFIX, 64).conversation_tag(conversation_id)
    return conversation_id, key_slot(tag.encode())


def migrate_slot(slot: int, source: Node, target: Node, masters: list[Node], tally: Tally) -> int:
    """Move ``slot`` from ``source`` to ``target`` a few keys at a time; return keys moved.

    After each few keys, the writers meet the half-migrated slot: the next chunk waits until
    some writer's call has ended (acknowledged or failed) since.
    """
    src = redis.Redis(port=source.port, socket_timeout=10)
    dst = redis.Redis(port=target.port, socket_timeout=10)
    try:
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id)
        moved = 0
        while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 3):
            src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
            moved += len(keys)
            mark = tally.calls()
            wait_for(
                lambda mark=mark: tally.calls() > mark, "a writer to meet the half-migrated slot"
            )
        for node in [target, source, *(m for m in masters if m not in (target, source))]:
            with redis.Redis(port=node.port, socket_timeout=10) as raw:
                raw.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
        return moved
    finally:
        src.close()
        dst.close()


@dataclass
class Tally:
    """What the writers were told: acknowledged message ids, and calls that failed."""

    acknowledged: list[str] = field(default_factory=list)
    failures: int = 0
    errors: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def calls(self) -> int:
        """How many calls have ended so far, acknowledged or failed."""
        with self.lock:
            return len(self.acknowledged) + self.failures

    def per_writer(self) -> Counter[str]:
        """Acknowledged appends per writer (``w3`` for writer 3)."""
        with self.lock:
            return Counter(i.split("-")[0] for i in self.acknowledged)

    def every_writer_past(self, mark: Counter[str]) -> bool:
        """Whether every writer has had an append acknowledged since ``mark``."""
        now = self.per_writer()
        return len(now) == WRITERS and all(now[w] > mark[w] for w in now)

    def failed(self, exc: Exception, writer: int, deadline: float) -> None:
        """Count a failed call; give up (fail the test) past ``deadline``."""
        with self.lock:
            self.failures += 1
            self.errors.add(type(exc).__name__)
        if time.monotonic() > deadline:
            raise AssertionError(f"writer {writer} gave up: {exc}") from exc


def everyone_appended(
    tally: Tally, writers: list[asyncio.Task[None]], mark: Counter[str] | None = None
) -> Callable[[], Awaitable[bool]]:
    """For the async tests: whether every writer has had an append acknowledged since ``mark``.

    A writer that has ended can append no more: its error (one that is no RepositoryError)
    is raised at once rather than after the deadline.
    """

    async def condition() -> bool:
        for task in writers:
            if task.done():
                task.result()
                raise AssertionError("a writer ended before the test stopped it")
        return tally.every_writer_past(mark or Counter())

    return condition


def message(writer: int, n: int) -> Message:
    return UserMessage(f"writer {writer} message {n}", id=f"w{writer}-{n:05d}")


def check(
    stored: list[Message], tally: Tally, label: str, *, may_lose: bool = False
) -> tuple[int, int]:
    """Assert no duplicates and nothing foreign; return (lost, present)."""
    ids = [m.id for m in stored]
    duplicates = len(ids) - len(set(ids))
    lost = sorted(set(tally.acknowledged) - set(ids))
    print(
        f"\n{label}: {len(tally.acknowledged)} appends acknowledged, {len(ids)} present after, "
        f"{len(lost)} acknowledged lost, {duplicates} duplicated; {tally.failures} calls "
        f"failed and were sent again ({', '.join(sorted(tally.errors)) or 'none'})"
    )
    assert duplicates == 0
    assert set(ids) <= {message(w, n).id for w in range(WRITERS) for n in range(100_000)}
    if not may_lose:
        assert lost == []
    return len(lost), len(ids)


# -- sync: threads ----------------------------------------------------------------------------


def run_sync_writers(
    repository: RedisChatMemoryRepository, conversation_id: str, stop: threading.Event
) -> Tally:
    tally = Tally()

    def write(writer: int) -> None:
        n = 0
        while not stop.is_set():
            batch = [message(writer, n)]
            deadline = time.monotonic() + GIVE_UP
            while True:
                try:
                    repository.append(conversation_id, batch)
                    break
                except RepositoryError as exc:  # the same message again: idempotent
                    tally.failed(exc, writer, deadline)
                    time.sleep(0.05)
            with tally.lock:
                tally.acknowledged.append(batch[0].id)
            n += 1

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    tally_threads[id(tally)] = threads
    return tally


tally_threads: dict[int, list[threading.Thread]] = {}


def join(tally: Tally) -> None:
    for thread in tally_threads.pop(id(tally)):
        thread.join(timeout=GIVE_UP + 10)
        assert not thread.is_alive()


@pytest.fixture
def seed_port(redis_cluster_url: str) -> int:
    port = cluster_seeds(redis_cluster_url)[0][1]
    wait_for(lambda: healthy(port), "a healthy cluster")
    return port


def test_resharding_a_busy_conversation_loses_and_duplicates_nothing_sync(
    redis_cluster_url: str, seed_port: int
) -> None:
    conversation_id, slot = busy_conversation()
    with RedisChatMemoryRepository.from_url(redis_cluster_url, key_prefix=PREFIX) as repository:
        stop = threading.Event()
        tally = run_sync_writers(repository, conversation_id, stop)
        try:
            wait_for(lambda: tally.every_writer_past(Counter()), "every writer to append")
            source = owner(slot, seed_port)
            masters = [n for n in cluster_nodes(seed_port) if n.master and n.slots]
            target = next(m for m in masters if m.id != source.id)
            before = redirections(masters)
            moved = migrate_slot(slot, source, target, masters, tally)
            mark = tally.per_writer()
            wait_for(lambda: tally.every_writer_past(mark), "every writer to append after the move")
        finally:
            stop.set()
            join(tally)
        assert owner(slot, seed_port).id == target.id
        stored = repository.find_by_conversation_id(conversation_id)
    print(f"\nslot {slot}: {moved} keys moved from :{source.port} to :{target.port}")
    report_redirections(before, redirections(masters))
    check(stored, tally, "resharding (sync, 8 threads)")
    assert len(tally.acknowledged) > WRITERS


async def test_resharding_a_busy_conversation_loses_and_duplicates_nothing_async(
    redis_cluster_url: str, seed_port: int
) -> None:
    conversation_id, slot = busy_conversation()
    tally = Tally()
    stop = asyncio.Event()

    async def write(repository: AsyncRedisChatMemoryRepository, writer: int) -> None:
        n = 0
        while not stop.is_set():
            batch = [message(writer, n)]
            deadline = time.monotonic() + GIVE_UP
            while True:
                try:
                    await repository.append(conversation_id, batch)
                    break
                except RepositoryError as exc:
                    tally.failed(exc, writer, deadline)
                    await asyncio.sleep(0.05)
            tally.acknowledged.append(batch[0].id)
            n += 1

    async with AsyncRedisChatMemoryRepository.from_url(
        redis_cluster_url, key_prefix=PREFIX
    ) as repository:
        writers = [asyncio.create_task(write(repository, w)) for w in range(WRITERS)]
        try:
            await async_wait_until(
                everyone_appended(tally, writers), GIVE_UP, "every writer to append"
            )
            source = owner(slot, seed_port)
            masters = [n for n in cluster_nodes(seed_port) if n.master and n.slots]
            target = next(m for m in masters if m.id != source.id)
            before = redirections(masters)
            moved = await asyncio.to_thread(migrate_slot, slot, source, target, masters, tally)
            await async_wait_until(
                everyone_appended(tally, writers, tally.per_writer()),
                GIVE_UP,
                "every writer to append after the move",
            )
        finally:
            stop.set()
            await asyncio.gather(*writers)
        assert owner(slot, seed_port).id == target.id
        stored = await repository.find_by_conversation_id(conversation_id)
    print(f"\nslot {slot}: {moved} keys moved from :{source.port} to :{target.port}")
    report_redirections(before, redirections(masters))
    check(stored, tally, "resharding (async, 8 tasks)")
    assert len(tally.acknowledged) > WRITERS


# -- failover: last in this file, and the cluster is put back ---------------------------------


def kill_master(slot: int, seed_port: int) -> tuple[Node, int]:
    """SIGKILL the master of ``slot``; return it and a port of a node still alive."""
    master = owner(slot, seed_port)
    alive = next(n.port for n in cluster_nodes(seed_port) if n.port != master.port)
    pid = int((RUN / f"node-{master.port}.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    return master, alive


def restore(killed: Node, alive: int) -> None:
    """Restart the killed node (it rejoins as a replica) and give it its master role back."""
    subprocess.run([str(SCRIPTS / "node.sh"), str(killed.port)], check=True, timeout=60)

    def synced() -> bool:
        with redis.Redis(port=killed.port, socket_timeout=2) as raw:
            info = raw.info("replication")
        return info.get("role") == "slave" and info.get("master_link_status") == "up"

    wait_for(synced, f"node {killed.port} to rejoin as a replica")
    with redis.Redis(port=killed.port, socket_timeout=10) as raw:
        raw.execute_command("CLUSTER", "FAILOVER")
    wait_for(
        lambda: any(n.id == killed.id and n.master for n in cluster_nodes(alive)),
        f"node {killed.port} to be master again",
    )
    for node in cluster_nodes(alive):
        wait_for(lambda port=node.port: healthy(port), f"node {node.port} to see a healthy cluster")


def test_failover_after_sigkill_of_a_master_sync(redis_cluster_url: str, seed_port: int) -> None:
    conversation_id, slot = busy_conversation()
    with RedisChatMemoryRepository.from_url(redis_cluster_url, key_prefix=PREFIX) as repository:
        stop = threading.Event()
        tally = run_sync_writers(repository, conversation_id, stop)
        killed: Node | None = None
        try:
            wait_for(lambda: tally.every_writer_past(Counter()), "every writer to append")
            killed, alive = kill_master(slot, seed_port)
            began = time.monotonic()
            wait_for(lambda: taken_over(slot, alive, killed), "the replica to take over")
            took = time.monotonic() - began
            mark = tally.per_writer()
            wait_for(lambda: tally.every_writer_past(mark), "every writer to append after it")
        finally:
            stop.set()
            join(tally)
            if killed is not None:
                restore(killed, alive)
        stored = repository.find_by_conversation_id(conversation_id)
    print(f"\nmaster :{killed.port} killed; its replica took over after {took:.1f} s")
    check(stored, tally, "failover (sync, 8 threads)", may_lose=True)


async def test_failover_after_sigkill_of_a_master_async(
    redis_cluster_url: str, seed_port: int
) -> None:
    conversation_id, slot = busy_conversation()
    tally = Tally()
    stop = asyncio.Event()

    async def write(repository: AsyncRedisChatMemoryRepository, writer: int) -> None:
        n = 0
        while not stop.is_set():
            batch = [message(writer, n)]
            deadline = time.monotonic() + GIVE_UP
            while True:
                try:
                    await repository.append(conversation_id, batch)
                    break
                except RepositoryError as exc:
                    tally.failed(exc, writer, deadline)
                    await asyncio.sleep(0.05)
            tally.acknowledged.append(batch[0].id)
            n += 1

    async with AsyncRedisChatMemoryRepository.from_url(
        redis_cluster_url, key_prefix=PREFIX
    ) as repository:
        writers = [asyncio.create_task(write(repository, w)) for w in range(WRITERS)]
        killed: Node | None = None
        try:
            await async_wait_until(
                everyone_appended(tally, writers), GIVE_UP, "every writer to append"
            )
            killed, alive = kill_master(slot, seed_port)
            began = time.monotonic()
            await asyncio.to_thread(
                wait_for, lambda: taken_over(slot, alive, killed), "the replica to take over"
            )
            took = time.monotonic() - began
            await async_wait_until(
                everyone_appended(tally, writers, tally.per_writer()),
                GIVE_UP,
                "every writer to append after it",
            )
        finally:
            stop.set()
            await asyncio.gather(*writers)
            if killed is not None:
                await asyncio.to_thread(restore, killed, alive)
        stored = await repository.find_by_conversation_id(conversation_id)
    print(f"\nmaster :{killed.port} killed; its replica took over after {took:.1f} s")
    check(stored, tally, "failover (async, 8 tasks)", may_lose=True)

"""The Redis Sentinel test topology, and writers that append through its failover.

``scripts/servers/redis-sentinel`` runs a master, two replicas and three sentinels watching
them as service ``chatmem``; the repository reaches the master through a ``redis+sentinel://``
URL. :class:`SentinelTopology` asks the sentinels which node is the master, fails over (the
master killed with SIGKILL, or a planned ``SENTINEL FAILOVER``) and brings a killed node back
as a replica of the new master (``rejoin.sh``).

:func:`run_failover` and :func:`async_run_failover` run one failover under 8 concurrent
writers (threads, or asyncio tasks) with the history checker beside them, as the PostgreSQL
ones in :mod:`tests.support.postgres_standby` do (its writers, tally and checker pacing are
reused: they only need a repository). The failover tests and
``benchmarks/failover_redis_sentinel.py`` both use them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis

from chatmem.testing import AsyncHistoryChecker, HistoryChecker
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository
from tests.support.postgres_standby import (
    GIVE_UP,
    FailoverRun,
    Tally,
    _AsyncWriters,
    _checked,
    _checker_options,
    _CheckerThread,
    _Pacing,
    _result,
    _running,
    _Writers,
)

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "servers" / "redis-sentinel"
PREFIX = "chatmem-sentinel-failover"


@dataclass(frozen=True)
class Node:
    """One Redis server of the topology, named by its port."""

    name: str
    port: int


@dataclass(frozen=True)
class Failover:
    """When a failover's steps happened (``time.monotonic()``)."""

    stopped: Node
    """The master killed (or, planned, demoted)."""
    promoted: Node
    """The replica the sentinels promoted."""
    killed_at: float
    """Just before the SIGKILL (planned: before ``SENTINEL FAILOVER`` was sent)."""
    dead_at: float
    """When the killed master had exited (planned: as ``killed_at``)."""
    promoted_at: float
    """When every sentinel named the new master and it answered as one."""


@dataclass(frozen=True)
class SentinelRun(FailoverRun):
    """A failover run, with how long before the failover the lost appends were acknowledged."""

    oldest_lost: float = 0.0
    """Seconds from the oldest lost append's acknowledgement to the failover (0: none lost)."""
    newest_lost: float = 0.0
    """Seconds from the failover to the newest lost append's acknowledgement (positive: the
    old master acknowledged it after the failover began, as in a planned one; 0: none
    lost)."""


class SentinelTopology:
    """The nodes and sentinels behind a ``redis+sentinel://`` URL of the test topology.

    Args:
        url: The topology's URL: its hosts are the sentinels, its path ``/service/db``.
        run_dir: ``$CHATMEM_SERVERS_RUN`` of the scripts that started it.
    """

    def __init__(self, url: str, run_dir: str | None = None) -> None:
        parts = urlsplit(url)
        hosts = parts.netloc.rpartition("@")[2].split(",")
        self.sentinels = [int(host.rpartition(":")[2]) for host in hosts]
        self.service = parts.path.strip("/").partition("/")[0]
        self.run = Path(run_dir or os.environ.get("CHATMEM_SERVERS_RUN", "/tmp/chatmem-servers"))
        self._env = {**os.environ, "CHATMEM_SERVERS_RUN": str(self.run)}
        self._env.pop("CHATMEM_SERVERS_LOCKED", None)

    def _sentinel(self, port: int) -> redis.Redis:
        return redis.Redis("127.0.0.1", port, socket_timeout=1, socket_connect_timeout=1)

    def masters(self) -> set[int | None]:
        """The master port each sentinel names (``None`` for one that does not answer)."""
        found: set[int | None] = set()
        for port in self.sentinels:
            try:
                with self._sentinel(port) as sentinel:
                    address = sentinel.sentinel_get_master_addr_by_name(self.service)
                found.add(int(address[1]) if address else None)
            except redis.RedisError:
                found.add(None)
        return found

    def master(self) -> Node:
        """The node every sentinel names as the master."""
        masters = self.masters()
        assert len(masters) == 1, f"sentinels disagree: {masters}"
        port = masters.pop()
        assert port is not None, "a sentinel does not answer"
        return Node(str(port), port)

    def _promoted_other_than(self, old: Node) -> Node | None:
        masters = self.masters()
        if len(masters) != 1 or None in masters or old.port in masters:
            return None
        port = masters.pop()
        assert port is not None
        try:
            with redis.Redis("127.0.0.1", port, socket_timeout=1) as node:
                role = node.role()[0]
        except redis.RedisError:
            return None
        return Node(str(port), port) if role in (b"master", "master") else None

    def rejoin(self) -> None:
        """Make the topology healthy: a node that is down comes back as a replica."""
        result = subprocess.run(
            [str(SCRIPTS / "rejoin.sh")],
            env=self._env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"rejoin.sh failed:\n{result.stdout}{result.stderr}"

    def fail_over(
        self, *, planned: bool = False, killed: threading.Event | None = None
    ) -> Failover:
        """Kill the master with SIGKILL, or switch it; wait until a replica is promoted.

        The killed node stays down; :meth:`rejoin` starts it again as a replica.

        Args:
            planned: ``SENTINEL FAILOVER`` instead of SIGKILL: the old master stays up and
                takes writes until the sentinels demote it (Redis 7.0's sentinels do not
                pause it first).
            killed: Set when the failover begins.
        """
        old = self.master()
        if planned:
            killed_at = time.monotonic()
            with self._sentinel(self.sentinels[0]) as sentinel:
                sentinel.execute_command("SENTINEL FAILOVER", self.service)
            dead_at = killed_at
            if killed is not None:
                killed.set()
        else:
            pid = int((self.run / "redis-sentinel" / f"node-{old.port}.pid").read_text())
            # Never signal a process that is not this node's server (a reused pid).
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            assert f":{old.port}" in command, f"pid {pid} is not the server on port {old.port}"
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            if killed is not None:
                killed.set()
            wait_until(lambda: not _running(pid), f"the master on {old.port} to exit")
            dead_at = time.monotonic()
        promoted: list[Node] = []

        def found() -> bool:
            node = self._promoted_other_than(old)
            if node is not None:
                promoted.append(node)
            return node is not None

        wait_until(found, "the sentinels to promote a replica", pause=0.02)
        return Failover(old, promoted[0], killed_at, dead_at, time.monotonic())


def wait_until(
    condition: Callable[[], object], what: str, within: float = GIVE_UP, pause: float = 0.002
) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(pause)


def _options(extra: dict[str, Any] | None, **more: Any) -> dict[str, Any]:
    # The checker hands its clock to every repository; Redis takes none (the server's clock
    # decides, and the checker's runs without a time to live).
    more.pop("clock", None)
    return {"key_prefix": PREFIX, "connect_timeout": 1, **(extra or {}), **more}


def _with_oldest_lost(run: FailoverRun, tally: Tally) -> SentinelRun:
    lost = set(run.lost)
    ages = [run.failover.killed_at - a.ended for a in tally.acks if a.message_id in lost]
    fields = {name: getattr(run, name) for name in run.__dataclass_fields__}
    return SentinelRun(
        **fields, oldest_lost=max(ages, default=0.0), newest_lost=-min(ages, default=0.0)
    )


def run_failover(
    topology: SentinelTopology,
    url: str,
    setting: str,
    *,
    planned: bool = False,
    options: dict[str, Any] | None = None,
    checker_seed: int | None = None,
    with_checker: bool = True,
    warm_up: float = 0.3,
) -> SentinelRun:
    """Fail over under 8 writer threads sharing one sync repository (and the checker's threads).

    Args:
        setting: A label for the run (``"default"``, ``"wait_replicas=1"``...).
        planned: ``SENTINEL FAILOVER`` instead of killing the master.
        options: Repository options (``wait_replicas``...), for the writers and the checker.
    """
    topology.rejoin()
    pacing = _Pacing()
    conversation_id = f"failover-{uuid.uuid4().hex[:12]}"
    repository = RedisChatMemoryRepository.from_url(url, **_options(options))
    checker = None
    if with_checker:
        checker = _CheckerThread(
            lambda clock: HistoryChecker(
                lambda **more: RedisChatMemoryRepository.from_url(url, **_options(options, **more)),
                clock=clock,
                **_checker_options(checker_seed),
            ).record(),
            pacing,
        )
    writers = _Writers(repository, conversation_id)  # type: ignore[arg-type]
    failover: Failover | None = None
    try:
        writers.wait_all_since(time.monotonic(), "every writer to append")
        time.sleep(warm_up)
        if checker is not None:
            checker.start()
        failover = topology.fail_over(planned=planned, killed=pacing.killed)
        writers.wait_all_since(failover.dead_at, "every writer to append after the failover")
        pacing.recovered.set()
        report = checker.join() if checker is not None else None
    finally:
        pacing.killed.set()
        pacing.recovered.set()
        try:
            writers.stop()
            stored = repository.find_by_conversation_id(conversation_id) if failover else []
            repository.delete_by_conversation_id(conversation_id)
        finally:
            repository.close()
            topology.rejoin()
    assert failover is not None
    checked = _checked(report, failover) if report is not None else None  # type: ignore[arg-type]
    run = _result(setting, failover, writers.tally, stored, checked)  # type: ignore[arg-type]
    return _with_oldest_lost(run, writers.tally)


async def async_run_failover(
    topology: SentinelTopology,
    url: str,
    setting: str,
    *,
    planned: bool = False,
    options: dict[str, Any] | None = None,
    checker_seed: int | None = None,
    with_checker: bool = True,
    warm_up: float = 0.3,
) -> SentinelRun:
    """As :func:`run_failover`, with 8 asyncio tasks sharing one async repository."""
    await asyncio.to_thread(topology.rejoin)
    pacing = _Pacing()
    conversation_id = f"failover-{uuid.uuid4().hex[:12]}"
    repository = AsyncRedisChatMemoryRepository.from_url(url, **_options(options))

    async def factory(**more: Any) -> AsyncRedisChatMemoryRepository:
        return AsyncRedisChatMemoryRepository.from_url(url, **_options(options, **more))

    checker = None
    if with_checker:
        checker = _CheckerThread(
            lambda clock: asyncio.run(
                AsyncHistoryChecker(factory, clock=clock, **_checker_options(checker_seed)).record()
            ),
            pacing,
        )
    writers = _AsyncWriters(repository, conversation_id)  # type: ignore[arg-type]
    failover: Failover | None = None
    try:
        await writers.wait_all_since(time.monotonic(), "every writer to append")
        await asyncio.sleep(warm_up)
        if checker is not None:
            await asyncio.to_thread(checker.start)
        failover = await asyncio.to_thread(
            lambda: topology.fail_over(planned=planned, killed=pacing.killed)
        )
        await writers.wait_all_since(failover.dead_at, "every writer to append after the failover")
        pacing.recovered.set()
        report = await asyncio.to_thread(checker.join) if checker is not None else None
    finally:
        pacing.killed.set()
        pacing.recovered.set()
        try:
            await writers.stop()
            stored = await repository.find_by_conversation_id(conversation_id) if failover else []
            await repository.delete_by_conversation_id(conversation_id)
        finally:
            await repository.aclose()
            await asyncio.to_thread(topology.rejoin)
    assert failover is not None
    checked = _checked(report, failover) if report is not None else None  # type: ignore[arg-type]
    run = _result(setting, failover, writers.tally, stored, checked)  # type: ignore[arg-type]
    return _with_oldest_lost(run, writers.tally)

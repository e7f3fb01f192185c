"""Network faults between a repository and its server, injected by Toxiproxy.

For every backend a writer appends batches with fresh message ids through a Toxiproxy proxy
while the test injects, in turn: 100 ms of latency, a blackhole (the proxy holds every
reply) that is then lifted, and connection resets mid-request. Each append's outcome is
recorded: ``ok``, ``failed`` (a plain error, which promises that nothing was applied) or
``unknown`` (``RepositoryOutcomeUnknownError``: it may have been). Then every
unknown batch is appended again with the same ids, and the history is read straight from the
server (not through the proxy):

- every acknowledged batch is there, exactly once (nothing lost, nothing doubled);
- every unknown batch is there exactly once after its retry;
- no failed batch is there (a plain error means nothing was applied);
- no call against the blackholed server took much longer than the configured timeout.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from chatmem.exceptions import (
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)
from chatmem.messages import AssistantMessage, Message, UserMessage
from chatmem_repositories import create_async_repository, create_repository
from tests.support.backends import SERVERS
from tests.support.servers import DEFAULT_PORTS, server_url
from tests.support.toxiproxy import Proxy, Toxiproxy

# The timeout every backend is configured with here (seconds): each phase below lasts a few
# times this long, so a scenario takes a few seconds per backend.
TIMEOUT = 1.0
# No call may take longer than this against a blackholed server: a timeout, a retry of the
# repository's (Redis, SQL) and a reconnection bounded by the connect timeout, plus slack
# for a loaded 2-core machine.
BOUND = 6.0

# Every backend takes the same two timeouts.
TIMEOUTS: dict[str, Any] = {"read_timeout": TIMEOUT, "connect_timeout": TIMEOUT}
# Per backend: options that set every timeout to TIMEOUT.
OPTIONS: dict[str, dict[str, Any]] = {
    **dict.fromkeys(SERVERS, TIMEOUTS),
    # Neo4j's driver also waits for a pooled connection and retries transactions.
    "neo4j": {
        **TIMEOUTS,
        "connection_acquisition_timeout": 2 * TIMEOUT,
        "max_transaction_retry_time": TIMEOUT,
    },
}
# Options for the repositories that read and retry straight from the server.
DIRECT: dict[str, dict[str, Any]] = {
    "postgresql": {"initialize_schema": "always"},
    "mariadb": {"initialize_schema": "always"},
}
# Options for the first, direct repository of a run (see _prepare).
PREPARE: dict[str, dict[str, Any]] = {"cassandra": {"create_keyspace": True}, "neo4j": {}}


def _with_address(url: str, address: str) -> str:
    parts = urlsplit(url)
    userinfo, _, _ = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{address}" if userinfo else address))


def _upstream(url: str, default_port: int) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or default_port}"


@dataclass
class Outcomes:
    """What each append of the writer got, and how long its errors took."""

    batches: list[tuple[str, list[Message]]] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)  # first message id -> error
    phase: str = "clean"
    error_seconds: dict[str, float] = field(default_factory=dict)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)

    def record(
        self, outcome: str, batch: list[Message], seconds: float, error: object = None
    ) -> None:
        self.batches.append((outcome, batch))
        if error is not None:
            self.failures[batch[0].id] = f"{self.phase}: {type(error).__name__}: {error}"
        if outcome != "ok":
            self.errors[self.phase] += 1
            self.error_seconds[self.phase] = max(self.error_seconds.get(self.phase, 0), seconds)

    def ids(self, outcome: str) -> list[str]:
        return [m.id for kind, batch in self.batches if kind == outcome for m in batch]

    def count(self, outcome: str) -> int:
        return sum(kind == outcome for kind, _ in self.batches)


def _batch(n: int) -> list[Message]:
    return [UserMessage(f"question {n}"), AssistantMessage(f"answer {n}")]


def _outcome(exc: BaseException) -> str:
    if isinstance(exc, RepositoryOutcomeUnknownError):
        return "unknown"
    return "failed"


def _faults(proxy: Proxy, outcomes: Outcomes) -> Iterator[float]:
    """Inject the faults in turn; yields how long to let the writer run in each phase."""
    outcomes.phase = "clean"
    yield 0.4
    outcomes.phase = "latency"
    with proxy.toxic("latency", latency=100):
        yield 0.5
    # The blackhole before the resets: after a reset, the Cassandra driver marks the host
    # down for seconds, and calls would fail at once instead of meeting the blackhole.
    outcomes.phase = "blackhole"
    # timeout 0: requests reach the server, every reply is held until the toxic is removed.
    with proxy.toxic("timeout", timeout=0):
        yield 2 * TIMEOUT + 0.5
    outcomes.phase = "recovery"
    yield 0.5
    outcomes.phase = "reset"
    # reset_peer with timeout 0 resets each connection as soon as data flows through it.
    with proxy.toxic("reset_peer", timeout=0):
        yield 0.4
    outcomes.phase = "healed"
    yield 0.5


@contextlib.contextmanager
def _proxy(backend: str) -> Iterator[tuple[Proxy, str, str]]:
    url = server_url(backend)
    api = Toxiproxy(server_url("toxiproxy"))
    port = DEFAULT_PORTS[backend]
    proxy = api.create(f"faults_{backend}_{uuid.uuid4().hex[:8]}", _upstream(url, port))
    try:
        yield proxy, url, _with_address(url, proxy.address)
    finally:
        proxy.delete()


def _prepare(backend: str, url: str, cid: str) -> None:
    """Make what the proxied repository needs, straight on the server, with default timeouts.

    Cassandra: the keyspace and tables, so that this module runs alone on a fresh server.
    Neo4j: a first append, since a cold server plans a statement the first time it sees it
    (over a second on a loaded machine), which the proxied repository's short timeouts must
    not measure. The other backends create their schema through the proxy in a few
    milliseconds.
    """
    if backend not in PREPARE:
        return
    with create_repository(url, **DIRECT.get(backend, {}), **PREPARE[backend]) as direct:
        direct.append(cid, [UserMessage("warm-up")])


def _check(backend: str, url: str, cid: str, outcomes: Outcomes) -> None:
    """Retry every unknown batch with the same ids, then check the history on the server."""
    direct = create_repository(url, **DIRECT.get(backend, {}))
    try:
        already = 0
        for kind, batch in outcomes.batches:
            if kind == "unknown":
                stored = direct.append(cid, batch)  # the retry: same messages, same ids
                already += not stored
        history = [m.id for m in direct.find_by_conversation_id(cid)]
        direct.delete_by_conversation_id(cid)
    finally:
        direct.close()
    counts = collections.Counter(history)
    duplicates = sum(n - 1 for n in counts.values())
    lost = [i for i in outcomes.ids("ok") if i not in counts]
    unknown_missing = [i for i in outcomes.ids("unknown") if i not in counts]
    failed_present = [i for i in outcomes.ids("failed") if i in counts]
    print(
        f"\n{backend}: {outcomes.count('ok')} ok, {outcomes.count('failed')} failed, "
        f"{outcomes.count('unknown')} unknown ({already} of them had been applied); "
        f"lost={len(lost)} duplicates={duplicates}; errors by phase {dict(outcomes.errors)}; "
        "longest time to an error: "
        + ", ".join(f"{p} {s:.2f}s" for p, s in outcomes.error_seconds.items())
    )
    assert lost == [], "acknowledged appends are missing"
    assert duplicates == 0, "a message is stored twice"
    assert unknown_missing == [], "an unknown append is missing after its retry"
    applied = [outcomes.failures.get(i, i) for i in failed_present]
    assert applied == [], "an append that raised a plain error was applied"
    assert outcomes.count("ok") > 0
    # An error is counted when its call ends: a call that met the blackhole may give up
    # just after the toxic was removed.
    blackholed = outcomes.errors["blackhole"] + outcomes.errors["recovery"]
    assert blackholed > 0, "the blackhole caused no error"
    assert max(outcomes.error_seconds.values()) < BOUND


def _run_sync(backend: str) -> None:
    options = OPTIONS[backend]
    cid = f"faults-{uuid.uuid4()}"
    outcomes = Outcomes()
    stop = threading.Event()
    crashed: list[BaseException] = []
    with _proxy(backend) as (proxy, url, proxied):
        repository = create_repository(proxied, **{**DIRECT.get(backend, {}), **options})

        def write() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                batch = _batch(n)
                began = time.monotonic()
                try:
                    repository.append(cid, batch)
                    outcomes.record("ok", batch, 0)
                except RepositoryError as exc:
                    outcomes.record(_outcome(exc), batch, time.monotonic() - began, exc)
                    time.sleep(0.02)  # a refused connection fails at once: do not spin
                except BaseException as exc:  # anything else is a bug: report it
                    crashed.append(exc)
                    raise

        try:
            _prepare(backend, url, cid)
            repository.append(cid, [UserMessage("warm-up")])
            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            for seconds in _faults(proxy, outcomes):
                time.sleep(seconds)
            stop.set()
            writer.join(timeout=BOUND + 5)
            assert not writer.is_alive(), "an append hangs"
            assert crashed == [], "the writer got an error that is not a RepositoryError"
        finally:
            stop.set()
            proxy.remove_all_toxics()
            repository.close()
    _check(backend, url, cid, outcomes)


async def _run_async(backend: str) -> None:
    options = OPTIONS[backend]
    cid = f"faults-{uuid.uuid4()}"
    outcomes = Outcomes()
    with _proxy(backend) as (proxy, url, proxied):
        repository = create_async_repository(proxied, **{**DIRECT.get(backend, {}), **options})

        async def write() -> None:
            n = 0
            while True:
                n += 1
                batch = _batch(n)
                began = time.monotonic()
                try:
                    await repository.append(cid, batch)
                    outcomes.record("ok", batch, 0)
                except RepositoryError as exc:
                    outcomes.record(_outcome(exc), batch, time.monotonic() - began, exc)
                    await asyncio.sleep(0.02)

        try:
            _prepare(backend, url, cid)
            await repository.append(cid, [UserMessage("warm-up")])
            async with _task(write()) as writer:
                for seconds in _faults(proxy, outcomes):
                    # The proxy's API is called from the loop: quick local HTTP requests.
                    await asyncio.sleep(seconds)
                assert not writer.done(), f"the writer stopped: {writer!r}"
        finally:
            proxy.remove_all_toxics()
            await repository.aclose()
    _check(backend, url, cid, outcomes)


@contextlib.asynccontextmanager
async def _task(coroutine: Any) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.ensure_future(coroutine)
    try:
        yield task
    finally:
        task.cancel()
        # A cancelled append is neither ok nor failed: it is simply not recorded.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, BOUND + 5)


def _params(names: list[str]) -> list[Any]:
    return [pytest.param(name, marks=[pytest.mark.backend(name)]) for name in names]


@pytest.mark.parametrize("backend", _params(list(SERVERS)))
def test_faults_lose_nothing_and_unknown_outcomes_apply_once_after_retry(backend: str) -> None:
    _run_sync(backend)


@pytest.mark.parametrize("backend", _params(["postgresql", "mariadb", "neo4j", "cassandra"]))
async def test_async_faults_lose_nothing_and_unknown_outcomes_apply_once_after_retry(
    backend: str,
) -> None:
    await _run_async(backend)


def test_write_timeouts_are_both_timeouts_and_unknown_outcomes() -> None:
    error = RepositoryWriteTimeoutError("late", backend="redis")
    assert isinstance(error, RepositoryOutcomeUnknownError)
    assert isinstance(error, RepositoryTimeoutError)
    assert isinstance(error, RepositoryConnectionError)

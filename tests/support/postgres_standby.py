"""The PostgreSQL primary/standby test topology, and writers that append through its failover.

``scripts/servers/postgres-standby`` runs two nodes, a primary and a streaming standby; the
repository reaches them through one multi-host URL with ``target_session_attrs=read-write``.
:class:`StandbyTopology` finds which node is which, switches the replication between
synchronous and asynchronous (as it rejoins), fails over (the primary's processes killed as
in a crash, then the standby promoted) and rejoins the old primary as the new one's standby.

:func:`run_failover` and :func:`async_run_failover` run one failover under concurrent writers
(threads, or asyncio tasks), each appending its own numbered messages to one conversation
through one repository and sending a failed append again, the same message, until it is
acknowledged; optionally the history checker runs beside them. They return what the writers
were told and what the store holds afterwards. The failover tests and
``benchmarks/failover_postgres.py`` both use them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from chatmem import UserMessage
from chatmem.exceptions import RepositoryError
from chatmem.messages import Message
from chatmem.testing import (
    Anomaly,
    AsyncHistoryChecker,
    CheckerSettings,
    HistoryChecker,
    HistoryReport,
    ManualClock,
    Outcome,
    find_anomalies,
)
from chatmem_repositories.sql import AsyncSqlChatMemoryRepository, SqlChatMemoryRepository

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "servers" / "postgres-standby"
PREFIX = "chatmem_failover_"
WRITERS = 8
GIVE_UP = 60.0  # seconds a writer keeps sending one append, or a wait lasts, before failing
# The checker's run: cycle 0 before the failover, cycle 1 meets it, cycle 2 runs once the
# writers are back and reads every conversation again.
CHECKER_SETTINGS = CheckerSettings(cycles=3, conversations=20)
# Anomalies a lost acknowledged commit explains (asynchronous replication): the write is gone,
# so reads miss it, a version it moved is read again and won again, a delete it made is undone,
# and a retry stores again what was lost. A commit never stores part of a batch, twice, or
# something nobody wrote: those kinds are never excused.
LOSS_ANOMALIES = frozenset(
    {
        "lost-append",
        "stale-system-message",
        "reorder",
        "inconsistent-order",
        "resurrected",
        "retry-not-idempotent",
        "double-version-win",
        "stale-version-win",
    }
)


@dataclass(frozen=True)
class Node:
    """One PostgreSQL server of the topology."""

    name: str
    port: int


@dataclass(frozen=True)
class Failover:
    """When a failover's steps happened (``time.monotonic()``)."""

    stopped: Node
    """The primary whose processes were killed."""
    promoted: Node
    """The standby promoted in its place."""
    killed_at: float
    """Just before the old primary got SIGQUIT (PostgreSQL's immediate shutdown)."""
    dead_at: float
    """When its postmaster, and with it every backend, had exited."""
    promoted_at: float
    """When ``pg_promote`` returned on the standby."""


class StandbyTopology:
    """The two nodes behind the multi-host URL of ``scripts/servers/postgres-standby``.

    Args:
        url: The topology's URL; its first host is node n1, its second n2.
        run_dir: ``$CHATMEM_SERVERS_RUN`` of the scripts that started it.
    """

    def __init__(self, url: str, run_dir: str | None = None) -> None:
        hosts = urlsplit(url).netloc.rpartition("@")[2].split(",")
        ports = [int(host.rpartition(":")[2]) for host in hosts]
        self.nodes = (Node("n1", ports[0]), Node("n2", ports[1]))
        self.run = Path(run_dir or os.environ.get("CHATMEM_SERVERS_RUN", "/tmp/chatmem-servers"))
        self._env = {
            **os.environ,
            "CHATMEM_SERVERS_RUN": str(self.run),
            "CHATMEM_POSTGRES_STANDBY_PORT": str(ports[0]),
        }
        self._env.pop("CHATMEM_SERVERS_LOCKED", None)

    def role(self, node: Node) -> str:
        """``"primary"``, ``"standby"`` or ``"down"``."""
        try:
            with _connect(node) as connection:
                row = connection.execute("SELECT pg_is_in_recovery()").fetchone()
        except psycopg.OperationalError:
            return "down"
        return "standby" if row and row[0] else "primary"

    def primary(self) -> Node:
        """The node that accepts writes."""
        found = [node for node in self.nodes if self.role(node) == "primary"]
        assert len(found) == 1, f"expected one primary, found {[n.name for n in found]}"
        return found[0]

    def replication(self) -> str:
        """The standby's ``sync_state`` as the primary reports it (``"sync"``, ``"async"``)."""
        with _connect(self.primary()) as connection:
            row = connection.execute("SELECT sync_state FROM pg_stat_replication").fetchone()
        assert row is not None, "the primary has no standby"
        return str(row[0])

    def rejoin(self, mode: str | None = None) -> None:
        """Make the pair healthy: the node that is not the primary becomes its standby again.

        Args:
            mode: ``"sync"`` or ``"async"`` replication; default: as it was.
        """
        self._script("rejoin.sh", *([mode] if mode else []))

    def fail_over(
        self,
        ready_to_promote: Callable[[float], object] | None = None,
        killed: threading.Event | None = None,
    ) -> Failover:
        """Kill the primary as a crash would (SIGQUIT: immediate shutdown), promote the standby.

        The old primary stays down; :meth:`rejoin` clones it again as the new one's standby.

        Args:
            ready_to_promote: Polled with the time of the kill once the old primary is gone;
                the standby is promoted when it returns true (at once without it), as a
                failover manager promotes once it has seen the primary fail.
            killed: Set right after the kill.
        """
        old = self.primary()
        new = next(node for node in self.nodes if node != old)
        pid = int((self.run / "postgres-standby" / f"{old.name}.pid").read_text())
        data = self.run / "postgres-standby" / old.name / "data"
        # Never signal a process that is not this node's postmaster (a reused pid).
        assert f"-D {data} " in _command_line(pid), f"pid {pid} is not the postmaster of {old}"
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGQUIT)
        if killed is not None:
            killed.set()
        _wait(lambda: not _running(pid), f"the postmaster of {old} to exit")
        dead_at = time.monotonic()
        if ready_to_promote is not None:
            _wait(lambda: ready_to_promote(killed_at), "the failure to be seen")
        with _connect(new) as connection:
            connection.execute("SELECT pg_promote(true, 60)")
        return Failover(old, new, killed_at, dead_at, time.monotonic())

    def _script(self, name: str, *args: str) -> None:
        result = subprocess.run(
            [str(SCRIPTS / name), *args],
            env=self._env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"{name} failed:\n{result.stdout}{result.stderr}"


def _connect(node: Node) -> psycopg.Connection[Any]:
    return psycopg.connect(
        host="127.0.0.1",
        port=node.port,
        user="test",
        password="test",
        dbname="testdb",
        connect_timeout=3,
        autocommit=True,
    )


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (this machine's init reaps them slowly)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait(condition: Callable[[], object], what: str, within: float = GIVE_UP) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


# -- what the writers were told -----------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    """An acknowledged append: which writer, which message, when its successful call ran."""

    writer: int
    message_id: str
    began: float
    ended: float


@dataclass
class Tally:
    """Acknowledged appends, and the errors of the calls that failed (sent again after)."""

    acks: list[Ack] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    last_error: float = 0.0
    """When the latest failed call ended (``time.monotonic()``)."""
    failures: list[tuple[float, RepositoryError]] = field(default_factory=list)
    """Every failed call: when it ended, and its error."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acknowledged(self, writer: int, message_id: str, began: float) -> None:
        with self.lock:
            self.acks.append(Ack(writer, message_id, began, time.monotonic()))

    def failed(self, exc: RepositoryError, writer: int, deadline: float) -> None:
        """Count a failed call by its class; fail the writer past ``deadline``."""
        with self.lock:
            self.errors[type(exc).__name__] += 1
            self.last_error = time.monotonic()
            self.failures.append((self.last_error, exc))
        if time.monotonic() > deadline:
            raise AssertionError(f"writer {writer} gave up: {exc}") from exc

    def writers_since(self, since: float) -> int:
        """How many writers have had a call that began at ``since`` or later acknowledged."""
        with self.lock:
            return len({a.writer for a in self.acks if a.began >= since})


def message(writer: int, n: int) -> Message:
    return UserMessage(f"writer {writer} message {n}", id=f"w{writer}-{n:06d}")


@dataclass(frozen=True)
class CheckerResult:
    """The history checker's run across the failover."""

    report: HistoryReport
    anomalies: list[Anomaly]
    outcomes: Counter[str]
    """Operations by outcome (``ok``, ``failed``, ``unknown``, ``conflict``)."""
    errors: Counter[str]
    """The classes of the errors its calls raised."""
    during: int
    """Its calls in flight at some time between the kill and the promotion."""


@dataclass(frozen=True)
class FailoverRun:
    """One failover under concurrent writers: what they were told, what the store kept."""

    mode: str
    failover: Failover
    acknowledged: int
    lost: list[str]
    """Acknowledged message ids missing afterwards."""
    duplicated: int
    """Messages stored more than once."""
    errors: Counter[str]
    """The classes of the errors the writers' calls raised (each call then sent again)."""
    first_recovered: float
    """Seconds from the kill until the first append that began after the old primary was
    gone was acknowledged."""
    all_recovered: float
    """Seconds from the kill until every writer had such an append acknowledged."""
    checker: CheckerResult | None = None

    def summary(self) -> str:
        errors = ", ".join(f"{n} {name}" for name, n in sorted(self.errors.items())) or "none"
        text = (
            f"{self.mode} replication, {self.failover.stopped.name} killed and "
            f"{self.failover.promoted.name} promoted: {self.acknowledged} appends acknowledged, "
            f"{len(self.lost)} lost, {self.duplicated} duplicated; writes again after "
            f"{self.first_recovered:.2f} s (every writer after {self.all_recovered:.2f} s; "
            f"promoted {self.failover.promoted_at - self.failover.killed_at:.2f} s after the "
            f"kill); failed calls sent again: {errors}"
        )
        if self.checker is not None:
            c = self.checker
            kinds = Counter(a.kind for a in c.anomalies)
            text += (
                f"\nhistory checker: {c.report.summary()}; {c.during} calls in flight between "
                "the kill and the promotion; errors: "
                + (", ".join(f"{n} {name}" for name, n in sorted(c.errors.items())) or "none")
                + "; anomalies: "
                + (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "none")
            )
        return text


def _result(
    mode: str,
    failover: Failover,
    tally: Tally,
    stored: list[Message],
    checker: CheckerResult | None,
) -> FailoverRun:
    ids = [m.id for m in stored]
    acknowledged = {a.message_id for a in tally.acks}
    after = [a for a in tally.acks if a.began >= failover.dead_at]
    first_by_writer = {}
    for ack in sorted(after, key=lambda a: a.ended):
        first_by_writer.setdefault(ack.writer, ack.ended)
    return FailoverRun(
        mode=mode,
        failover=failover,
        acknowledged=len(tally.acks),
        lost=sorted(acknowledged - set(ids)),
        duplicated=len(ids) - len(set(ids)),
        errors=Counter(tally.errors),
        first_recovered=min(first_by_writer.values()) - failover.killed_at,
        all_recovered=max(first_by_writer.values()) - failover.killed_at,
        checker=checker,
    )


def _checked(report: HistoryReport, failover: Failover) -> CheckerResult:
    outcomes: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    during = 0
    for operation in report.history.operations:
        outcomes[operation.outcome.value] += 1
        if operation.outcome in (Outcome.FAILED, Outcome.UNKNOWN):
            errors[operation.error.partition("(")[0]] += 1
        # Its times are the run's own monotonic ones: the checker's clock never moves.
        if operation.invoked <= failover.promoted_at and operation.completed >= failover.killed_at:
            during += 1
    return CheckerResult(report, find_anomalies(report.history), outcomes, errors, during)


@dataclass
class _Pacing:
    """Events shared by the writers, the checker and the failover."""

    checker_ready: threading.Event = field(default_factory=threading.Event)
    """The checker has finished cycle 0: the primary may be killed."""
    killed: threading.Event = field(default_factory=threading.Event)
    recovered: threading.Event = field(default_factory=threading.Event)
    """Every writer has appended again after the failover."""


class _CycleClock(ManualClock):
    """The checker's clock, used to pace it against the failover; it never moves.

    The checker advances its clock (by 0 s here) between two cycles, when none of its calls
    is in flight. After cycle 0 the primary is killed and cycle 1 begins with it, so its calls
    meet the failover; after any later cycle the checker waits until the writers are back, so
    its last cycle reads every conversation from the promoted standby.
    """

    def __init__(self, pacing: _Pacing) -> None:
        super().__init__()
        self._pacing = pacing
        self._cycles = 0

    def advance(self, by: float | timedelta) -> Any:
        self._cycles += 1
        if self._cycles == 1:
            self._pacing.checker_ready.set()
            waited = self._pacing.killed.wait(GIVE_UP)
        else:
            waited = self._pacing.recovered.wait(GIVE_UP)
        if not waited:
            raise AssertionError("the failover did not happen or the writers did not recover")
        return super().advance(by)


class _CheckerThread:
    """The history checker in a thread of its own, its clock pacing it against the failover.

    The async checker runs there too, with an event loop of its own: between cycles its clock
    waits for the failover and the writers' recovery, which must not block the writers' loop.
    """

    def __init__(self, record: Callable[[ManualClock], HistoryReport], pacing: _Pacing) -> None:
        self.report: HistoryReport | None = None
        self.problem: BaseException | None = None
        self._record = record
        self._pacing = pacing
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            self.report = self._record(_CycleClock(self._pacing))
        except BaseException as exc:  # raised by join(), not lost in the thread
            self.problem = exc
            self._pacing.checker_ready.set()

    def start(self) -> None:
        self._thread.start()
        _wait(self._pacing.checker_ready.is_set, "the checker's first cycle")
        if self.problem is not None:
            raise self.problem

    def join(self) -> HistoryReport:
        self._thread.join(GIVE_UP * 3)
        assert not self._thread.is_alive(), "the history checker did not finish"
        if self.problem is not None:
            raise self.problem
        assert self.report is not None
        return self.report


def _checker_options(seed: int | None) -> dict[str, Any]:
    """The checker's settings; no time to live, and a clock that never moves (``_CycleClock``)."""
    return {"seed": seed, "ttl": None, "expiry_pause": 0.0, "settings": CHECKER_SETTINGS}


def _repository_options() -> dict[str, Any]:
    return {"table_prefix": PREFIX, "initialize_schema": "always", "connect_timeout": 3}


# -- sync: threads --------------------------------------------------------------------------------


class _Writers:
    """Writer threads appending through one sync repository until stopped."""

    def __init__(self, repository: SqlChatMemoryRepository, conversation_id: str) -> None:
        self.tally = Tally()
        self.problems: list[BaseException] = []
        self._repository = repository
        self._conversation_id = conversation_id
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(w,)) for w in range(WRITERS)]
        for thread in self._threads:
            thread.start()

    def _write(self, writer: int) -> None:
        try:
            n = 0
            while not self._stop.is_set():
                batch = [message(writer, n)]
                deadline = time.monotonic() + GIVE_UP
                while True:
                    began = time.monotonic()
                    try:
                        self._repository.append(self._conversation_id, batch)
                        break
                    except RepositoryError as exc:  # the same message again: idempotent
                        self.tally.failed(exc, writer, deadline)
                        time.sleep(0.02)
                self.tally.acknowledged(writer, batch[0].id, began)
                n += 1
        except BaseException as exc:  # raised by the run, not lost in the thread
            self.problems.append(exc)

    def wait_all_since(self, since: float, what: str) -> None:
        """Until every writer has had a call that began at ``since`` or later acknowledged."""
        _wait(lambda: self.problems or self.tally.writers_since(since) == WRITERS, what)
        self.check()

    def check(self) -> None:
        if self.problems:
            raise self.problems[0]

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(GIVE_UP + 10)
        self.check()


def run_failover(
    topology: StandbyTopology,
    url: str,
    mode: str,
    *,
    checker_seed: int | None = None,
    with_checker: bool = True,
    warm_up: float = 0.3,
) -> FailoverRun:
    """Fail over under 8 writer threads sharing one sync repository (and the checker's threads).

    The topology is made healthy with ``mode`` replication first, and rejoined afterwards.
    The standby is promoted once a writer has seen the primary fail.
    """
    topology.rejoin(mode)
    assert topology.replication() == mode
    pacing = _Pacing()
    conversation_id = f"failover-{uuid.uuid4().hex[:12]}"
    repository = SqlChatMemoryRepository.from_url(url, **_repository_options())
    checker = None
    if with_checker:
        checker = _CheckerThread(
            lambda clock: HistoryChecker(
                lambda **options: SqlChatMemoryRepository.from_url(
                    url, **_repository_options(), **options
                ),
                clock=clock,
                **_checker_options(checker_seed),
            ).record(),
            pacing,
        )
    writers = _Writers(repository, conversation_id)
    failover: Failover | None = None
    try:
        writers.wait_all_since(time.monotonic(), "every writer to append")
        time.sleep(warm_up)
        if checker is not None:
            checker.start()
        tally = writers.tally
        failover = topology.fail_over(
            lambda killed: writers.problems or tally.last_error > killed, pacing.killed
        )
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
    checked = _checked(report, failover) if report is not None else None
    return _result(mode, failover, writers.tally, stored, checked)


# -- async: tasks ---------------------------------------------------------------------------------


class _AsyncWriters:
    """Writer tasks appending through one async repository until stopped."""

    def __init__(self, repository: AsyncSqlChatMemoryRepository, conversation_id: str) -> None:
        self.tally = Tally()
        self._repository = repository
        self._conversation_id = conversation_id
        self._stop = asyncio.Event()
        self._tasks = [asyncio.create_task(self._write(w)) for w in range(WRITERS)]

    async def _write(self, writer: int) -> None:
        n = 0
        while not self._stop.is_set():
            batch = [message(writer, n)]
            deadline = time.monotonic() + GIVE_UP
            while True:
                began = time.monotonic()
                try:
                    await self._repository.append(self._conversation_id, batch)
                    break
                except RepositoryError as exc:
                    self.tally.failed(exc, writer, deadline)
                    await asyncio.sleep(0.02)
            self.tally.acknowledged(writer, batch[0].id, began)
            n += 1

    def ended(self) -> bool:
        """Whether a writer has ended (raising its error, if it has one)."""
        for task in self._tasks:
            if task.done():
                task.result()
                return True
        return False

    async def wait_all_since(self, since: float, what: str) -> None:
        """Until every writer has had a call that began at ``since`` or later acknowledged."""
        deadline = time.monotonic() + GIVE_UP
        while self.tally.writers_since(since) < WRITERS:
            assert not self.ended(), "a writer ended before the run stopped it"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


async def async_run_failover(
    topology: StandbyTopology,
    url: str,
    mode: str,
    *,
    checker_seed: int | None = None,
    with_checker: bool = True,
    warm_up: float = 0.3,
) -> FailoverRun:
    """Fail over under 8 writer tasks sharing one async repository (and the async checker).

    As :func:`run_failover`; the checker runs in a thread with an event loop of its own.
    """
    await asyncio.to_thread(topology.rejoin, mode)
    assert await asyncio.to_thread(topology.replication) == mode
    pacing = _Pacing()
    conversation_id = f"failover-{uuid.uuid4().hex[:12]}"
    repository = AsyncSqlChatMemoryRepository.from_url(url, **_repository_options())

    async def factory(**options: Any) -> AsyncSqlChatMemoryRepository:
        return AsyncSqlChatMemoryRepository.from_url(url, **_repository_options(), **options)

    checker = None
    if with_checker:
        checker = _CheckerThread(
            lambda clock: asyncio.run(
                AsyncHistoryChecker(factory, clock=clock, **_checker_options(checker_seed)).record()
            ),
            pacing,
        )
    writers = _AsyncWriters(repository, conversation_id)
    failover: Failover | None = None
    try:
        await writers.wait_all_since(time.monotonic(), "every writer to append")
        await asyncio.sleep(warm_up)
        if checker is not None:
            await asyncio.to_thread(checker.start)
        tally = writers.tally
        failover = await asyncio.to_thread(
            topology.fail_over,
            lambda killed: tally.last_error > killed,
            pacing.killed,
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
    checked = _checked(report, failover) if report is not None else None
    return _result(mode, failover, writers.tally, stored, checked)


def spread(values: list[float]) -> str:
    """``min / median / max`` of ``values``, in seconds."""
    if not values:
        return "-"
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} s"

"""The three-node Cassandra test ring, and writers that append through node failures.

``scripts/servers/cassandra-ring`` runs nodes n1, n2 and n3 on 127.0.0.2-4; the repository
reaches them through one URL naming the three, and creates its keyspace with replication
factor 3, so every node holds every row and QUORUM (two of three) outlives one node.
:class:`RingTopology` kills a node as a crash would (SIGKILL) and starts it again on its data.

:func:`run_ring_faults` runs one fault sequence under concurrent writer threads, each
appending its own numbered messages to one conversation through one repository (made once)
and sending a failed append again, the same message, until it is acknowledged:

1. one node killed: QUORUM still has two replicas; the history checker (seeded) runs its
   cycles against the ring meanwhile, with a repository of its own;
2. a second node killed: one replica is left, so writes fail with typed errors;
3. both started again (side by side): writes succeed again.

It returns what the writers were told and what the store holds afterwards, per phase, and
the positions the lightweight-transaction counter gave out. The fault test and
``benchmarks/failover_cassandra.py`` both use it.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cassandra.cluster import Cluster

from chatmem.exceptions import RepositoryError
from chatmem.testing import CheckerSettings, HistoryChecker
from chatmem_repositories.cassandra import CassandraChatMemoryRepository
from tests.support.postgres_standby import (
    CheckerResult,
    Tally,
    _CheckerThread,
    _Pacing,
    message,
)

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "servers" / "cassandra-ring"
PREFIX = "chatmem_ring_"
WRITERS = 8
# Two nodes restarting side by side on a loaded 2-core machine take up to a few minutes:
# a writer keeps sending one append this long before it fails the run.
GIVE_UP = 300.0
CHECKER_SETTINGS = CheckerSettings(cycles=3, conversations=8)
NODES = ("n1", "n2", "n3")


def ring_hosts(url: str) -> list[str]:
    """The addresses a ring URL names, in order (n1, n2, n3)."""
    return [h.rpartition(":")[0] for h in urlsplit(url).netloc.rpartition("@")[2].split(",")]


def ring_keyspace(url: str) -> str:
    """The keyspace a ring URL names."""
    return urlsplit(url).path.strip("/")


class RingTopology:
    """The three nodes behind the ring URL.

    Args:
        url: The ring's URL (its hosts are n1, n2, n3 in order).
        run_dir: ``$CHATMEM_SERVERS_RUN`` of the scripts that started it.
    """

    def __init__(self, url: str, run_dir: str | None = None) -> None:
        self.url = url
        self.addresses = dict(zip(NODES, ring_hosts(url), strict=True))
        run = run_dir or os.environ.get("CHATMEM_SERVERS_RUN", "/tmp/chatmem-servers")
        self._env = {**os.environ, "CHATMEM_SERVERS_RUN": run}
        self._env.pop("CHATMEM_SERVERS_LOCKED", None)
        self._marks: dict[str, int] = {}

    def status(self, node: str) -> str:
        """``"up"`` or ``"down"`` (whether its process runs)."""
        return self._script("status", node).strip()

    def kill(self, node: str) -> float:
        """SIGKILL the node and wait until its process is gone; return when it got the signal."""
        self._marks = {n: self._log(n).stat().st_size for n in NODES if n != node}
        at = time.monotonic()
        self._script("kill", node)
        return at

    def wait_seen_down(self, node: str, within: float = GIVE_UP) -> None:
        """Wait until the other nodes' failure detectors have marked ``node`` down.

        Until then a coordinator still picks it, for instance to hold a logged batch's
        batchlog, and such a write times out. There is no JMX here (no ``nodetool``): the
        nodes' logs say it (``Gossiper - InetAddress /ADDRESS:PORT is now DOWN``).
        """
        line = f"/{self.addresses[node]}:7000 is now DOWN".encode()
        deadline = time.monotonic() + within
        for other, mark in self._marks.items():
            while True:
                with self._log(other).open("rb") as log:
                    log.seek(mark)
                    if line in log.read():
                        break
                assert time.monotonic() < deadline, f"{other} did not see {node} go down"
                time.sleep(0.1)

    def _log(self, node: str) -> Path:
        return (
            Path(self._env["CHATMEM_SERVERS_RUN"]) / "cassandra-ring" / node / "logs" / "stdout.log"
        )

    def stop(self, node: str) -> None:
        """Stop the node cleanly (SIGTERM, a drain) and wait until its process is gone."""
        self._script("stop", node)

    def start(self, node: str, commitlog: str | None = None) -> subprocess.Popen[str]:
        """Start the node on its data; the returned process ends once it answers CQL.

        Args:
            node: ``n1``, ``n2`` or ``n3``.
            commitlog: ``batch`` (the ring's setting, the default) or ``periodic``
                (``CHATMEM_RING_COMMITLOG``, read when the node starts).
        """
        env = self._env if commitlog is None else {**self._env, "CHATMEM_RING_COMMITLOG": commitlog}
        return subprocess.Popen(
            [str(SCRIPTS / "node.sh"), "start", node],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def ensure_up(self) -> None:
        """Start every node that is down and wait for it (the tests leave the ring whole)."""
        starting = [self.start(node) for node in NODES if self.status(node) != "up"]
        for process in starting:
            finish(process)

    def _script(self, action: str, node: str) -> str:
        result = subprocess.run(
            [str(SCRIPTS / "node.sh"), action, node],
            env=self._env,
            capture_output=True,
            text=True,
            timeout=GIVE_UP,
            check=False,
        )
        assert result.returncode == 0, f"node.sh {action} {node}:\n{result.stdout}{result.stderr}"
        return result.stdout


def finish(process: subprocess.Popen[str]) -> None:
    """Wait for a ``node.sh start`` and fail with its output if it failed."""
    output, _ = process.communicate(timeout=GIVE_UP)
    assert process.returncode == 0, f"node.sh start failed:\n{output}"


def repository_options() -> dict[str, Any]:
    """The repository's options for the ring (QUORUM and SERIAL are the defaults)."""
    return {"table_prefix": PREFIX, "initialize_schema": "always", "connect_timeout": 3}


# -- writers ----------------------------------------------------------------------------------


class Writers:
    """Writer threads appending through one sync repository until stopped."""

    def __init__(self, repository: CassandraChatMemoryRepository, conversation_id: str) -> None:
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
                        time.sleep(0.05)
                self.tally.acknowledged(writer, batch[0].id, began)
                n += 1
        except BaseException as exc:  # raised by the run, not lost in the thread
            self.problems.append(exc)

    def wait(self, condition: Any, what: str) -> None:
        """Until ``condition()`` holds, failing if a writer failed or it takes too long."""
        deadline = time.monotonic() + GIVE_UP
        while not condition():
            self.check()
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.01)
        self.check()

    def wait_all_since(self, since: float, what: str) -> None:
        """Until every writer has had a call that began at ``since`` or later acknowledged."""
        self.wait(lambda: self.tally.writers_since(since) == WRITERS, what)

    def errors_since(self, since: float) -> Counter[str]:
        """The classes of the failed calls that ended at ``since`` or later."""
        with self.tally.lock:
            return Counter(type(e).__name__ for at, e in self.tally.failures if at >= since)

    def check(self) -> None:
        if self.problems:
            raise self.problems[0]

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(GIVE_UP + 10)
        self.check()


# -- one run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """What the writers saw in one phase of the run."""

    name: str
    began: float
    acknowledged: int
    """Appends acknowledged in the phase (by when their call ended)."""
    errors: Counter[str]
    """The classes of the failed calls that ended in the phase."""
    causes: Counter[str]
    """The driver errors behind them (``__cause__``)."""
    samples: dict[str, str] = field(default_factory=dict)
    """One message per error class."""


@dataclass(frozen=True)
class RingRun:
    """One fault sequence under concurrent writers: what they were told, what the ring kept."""

    phases: list[Phase]
    acknowledged: int
    lost: list[str]
    """Acknowledged message ids missing afterwards."""
    duplicated: int
    """Messages stored more than once."""
    stored: int
    positions: list[int]
    """The positions of the stored messages, in order."""
    next_position: int
    """The conversation's counter afterwards."""
    recovered: float
    """Seconds from the moment both nodes answered again until every writer had an append
    that began after it acknowledged."""
    quorum_recovered: float
    """Seconds from the moment the first of the two nodes answered again (a quorum again)
    until an append that began after it was acknowledged."""
    restart: float
    """Seconds the two nodes took to start again (side by side)."""
    first_failure: float
    """Seconds from the second kill until a writer's call first failed."""
    seen_down: float
    """Seconds from the first kill until the other two nodes had marked the node down."""
    checker: CheckerResult | None = None
    all_errors: Counter[str] = field(default_factory=Counter)
    lost_detail: str = ""
    """For lost messages: when their calls ended, and what the ring held of them a few
    seconds later (claims and rows read at ``ALL``, the history read again)."""

    @property
    def positions_consistent(self) -> bool:
        """Every stored message has its own position, and no position was skipped."""
        expected = list(range(self.next_position - len(self.positions), self.next_position))
        return sorted(self.positions) == expected

    def summary(self) -> str:
        def errors(counter: Counter[str]) -> str:
            return ", ".join(f"{n} {name}" for name, n in sorted(counter.items())) or "none"

        lines = [
            f"{self.acknowledged} appends acknowledged, {len(self.lost)} lost, "
            f"{self.duplicated} duplicated, {self.stored} stored; node seen down after "
            f"{self.seen_down:.1f} s; positions consistent: "
            f"{self.positions_consistent}; restart of two nodes {self.restart:.1f} s; "
            "first append again "
            f"{self.quorum_recovered:.2f} s after the first node answered, every writer "
            f"{self.recovered:.2f} s after both answered"
        ]
        for phase in self.phases:
            lines.append(
                f"  {phase.name}: {phase.acknowledged} acknowledged; errors: "
                f"{errors(phase.errors)}; causes: {errors(phase.causes)}"
            )
            lines.extend(f"    {name}: {text}" for name, text in sorted(phase.samples.items()))
        if self.checker is not None:
            c = self.checker
            kinds = Counter(a.kind for a in c.anomalies)
            lines.append(
                f"  history checker (one node down): {c.report.summary()}; errors: "
                f"{errors(c.errors)}; anomalies: {errors(kinds)}"
            )
        return "\n".join(lines)


def _phase(writers: Writers, name: str, began: float, ended: float) -> Phase:
    tally = writers.tally
    with tally.lock:
        acked = sum(1 for a in tally.acks if began <= a.ended < ended)
        failed = [e for at, e in tally.failures if began <= at < ended]
    return Phase(
        name,
        began,
        acked,
        Counter(type(e).__name__ for e in failed),
        Counter(type(e.__cause__).__name__ for e in failed if e.__cause__ is not None),
        {type(e).__name__: str(e)[:300] for e in failed},
    )


def stored_positions(url: str, conversation_id: str) -> tuple[list[int], int]:
    """The positions of a conversation's chat messages and its counter, read at QUORUM."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    keyspace = ring_keyspace(url)
    cluster = Cluster(ring_hosts(url))
    try:
        session = cluster.connect()
        table = f"{keyspace}.{PREFIX}messages_v2"
        rows = session.execute(
            SimpleStatement(
                f"SELECT position, next_position FROM {table}"
                " WHERE conversation_id = %s AND section = 'c'",
                consistency_level=ConsistencyLevel.QUORUM,
            ),
            (conversation_id,),
        ).all()
    finally:
        cluster.shutdown()
    positions = sorted(row.position for row in rows)
    return positions, (rows[0].next_position if rows else 0)


def run_ring_faults(
    topology: RingTopology,
    *,
    checker_seed: int | None = None,
    with_checker: bool = True,
    one_down: float = 1.0,
    two_down: float = 2.0,
) -> RingRun:
    """Kill n3, then n2, under 8 writer threads; start both again; read everything back.

    Args:
        topology: The ring (every node is started first if it is down).
        checker_seed: The history checker's seed.
        with_checker: Run the checker while one node is down.
        one_down: Seconds of writing with one node down (after the checker).
        two_down: Seconds of failing writes with two nodes down, counted from the first
            failure, before the restarts begin.
    """
    topology.ensure_up()
    url = topology.url
    conversation_id = f"ring-{uuid.uuid4().hex[:12]}"
    repository = CassandraChatMemoryRepository.from_url(url, **repository_options())
    pacing = _Pacing()
    checker = None
    if with_checker:
        checker = _CheckerThread(
            lambda clock: HistoryChecker(
                lambda **options: _checker_repository(url, options),
                clock=clock,
                seed=checker_seed,
                ttl=None,
                expiry_pause=0.0,
                settings=CHECKER_SETTINGS,
            ).record(),
            pacing,
        )
    writers = Writers(repository, conversation_id)
    starting: list[subprocess.Popen[str]] = []
    try:
        start = time.monotonic()
        writers.wait_all_since(start, "every writer to append")
        if checker is not None:
            checker.start()
        # 1) one node down: QUORUM has two replicas left.
        killed_one = topology.kill("n3")
        pacing.killed.set()  # the checker's cycle 1 meets the kill
        topology.wait_seen_down("n3")
        seen_down = time.monotonic() - killed_one
        # Its last cycle (and its clean-up) once the other nodes know: the node still down.
        pacing.recovered.set()
        report = checker.join() if checker is not None else None
        writers.wait_all_since(time.monotonic(), "every writer to append with one node down")
        time.sleep(one_down)
        # 2) two nodes down: one replica left; writes fail until a second one is back.
        killed_two = topology.kill("n2")
        writers.wait(lambda: writers.errors_since(killed_two), "a write to fail")
        first_failure = writers.tally.last_error - killed_two
        time.sleep(two_down)
        # 3) both started again, side by side.
        restarting = time.monotonic()
        starting = [topology.start("n2"), topology.start("n3")]
        first_back = 0.0
        while any(process.poll() is None for process in starting):
            if not first_back and any(process.poll() is not None for process in starting):
                first_back = time.monotonic()  # a quorum again
            time.sleep(0.05)
        for process in starting:
            finish(process)
        back = time.monotonic()
        first_back = first_back or back
        writers.wait_all_since(back, "every writer to append after the restart")
        recovered = max(a.ended for a in _firsts_since(writers.tally, back)) - back
        quorum_recovered = min(a.ended for a in _firsts_since(writers.tally, first_back))
        quorum_recovered -= first_back
        ended = time.monotonic()
    finally:
        pacing.killed.set()
        pacing.recovered.set()
        for process in starting:
            if process.poll() is None:
                process.wait(GIVE_UP)
        try:
            writers.stop()
            topology.ensure_up()
            stored = repository.find_by_conversation_id(conversation_id)
            positions, next_position = stored_positions(url, conversation_id)
            missing = {a.message_id for a in writers.tally.acks} - {m.id for m in stored}
            lost_detail = ""
            if missing:  # what the ring holds of them, read before the conversation goes
                try:
                    lost_detail = _diagnose_loss(url, conversation_id, missing)
                    lost_detail += "; acknowledged at " + ", ".join(
                        f"{a.message_id} {a.ended - start:.1f} s (kills at"
                        f" {killed_one - start:.1f} and {killed_two - start:.1f} s)"
                        for a in writers.tally.acks
                        if a.message_id in missing
                    )
                except Exception as exc:  # the run's own outcome matters more
                    lost_detail = f"diagnosis failed: {exc!r}"
            repository.delete_by_conversation_id(conversation_id)
        finally:
            repository.close()
    tally = writers.tally
    ids = [m.id for m in stored]
    phases = [
        _phase(writers, "all up", start, killed_one),
        _phase(writers, "one node down", killed_one, killed_two),
        _phase(writers, "two nodes down", killed_two, first_back),
        _phase(writers, "one node back", first_back, back),
        _phase(writers, "both back", back, ended),
    ]
    checked = None
    if report is not None:
        from tests.support.postgres_standby import Failover, Node, _checked

        window = Failover(Node("n3", 0), Node("n1", 0), killed_one, killed_one, killed_two)
        checked = _checked(report, window)
    return RingRun(
        phases=phases,
        acknowledged=len(tally.acks),
        lost=sorted(missing),
        duplicated=len(ids) - len(set(ids)),
        stored=len(ids),
        positions=positions,
        next_position=next_position,
        recovered=recovered,
        quorum_recovered=quorum_recovered,
        restart=back - restarting,
        first_failure=first_failure,
        seen_down=seen_down,
        checker=checked,
        all_errors=Counter(tally.errors),
        lost_detail=lost_detail,
    )


def _diagnose_loss(url: str, conversation_id: str, missing: set[str]) -> str:
    """Say what the ring holds of acknowledged messages a history read did not return.

    Reads the partition's rows directly (not through the repository, whose decoding would
    stop at the first damaged row), at ``ALL`` a few seconds after the history read.
    """
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    time.sleep(5)  # hints and read repair have had a moment
    table = f"{ring_keyspace(url)}.{PREFIX}messages_v2"
    cluster = Cluster(ring_hosts(url))
    try:
        session = cluster.connect()
        query = (
            f"SELECT section, position, message_id, claimed, data, type,"
            f" WRITETIME(data) AS written FROM {table} WHERE conversation_id = %s"
        )
        try:
            level = "ALL"
            rows = session.execute(
                SimpleStatement(query, consistency_level=ConsistencyLevel.ALL), (conversation_id,)
            ).all()
        except Exception:  # a node down again: what a quorum holds
            level = "QUORUM"
            rows = session.execute(
                SimpleStatement(query, consistency_level=ConsistencyLevel.QUORUM),
                (conversation_id,),
            ).all()
    finally:
        cluster.shutdown()
    claims = {r.message_id: r for r in rows if r.section == "i"}
    chat = [r for r in rows if r.section == "c"]
    odd = [r for r in chat if not (r.data or "").startswith("{")]
    parts = [f"{len(chat)} chat rows at {level}, {len(odd)} without a JSON document"]
    parts += [
        f"odd row: position {r.position} id {r.message_id} type {r.type}"
        f" data {str(r.data)[:40]!r} written {r.written}"
        for r in odd[:5]
    ]
    for message_id in sorted(missing):
        claim = claims.get(message_id)
        position = claim.claimed if claim else None
        at = [(r.message_id, str(r.data)[:40]) for r in chat if r.position == position]
        token = claim.data if claim else None
        parts.append(
            f"{message_id}: claimed at {position} (token {token!r}), rows at that position {at}"
        )
    return "; ".join(parts)


def _checker_repository(url: str, options: dict[str, Any]) -> CassandraChatMemoryRepository:
    # The checker's clock (it never moves here) is for backends whose expiry it drives;
    # Cassandra's own clock decides expiry, and the run has no TTL.
    options = {k: v for k, v in options.items() if k != "clock"}
    return CassandraChatMemoryRepository.from_url(url, **repository_options(), **options)


def _firsts_since(tally: Tally, since: float) -> list[Any]:
    """Each writer's first acknowledged append that began at ``since`` or later."""
    firsts: dict[int, Any] = {}
    with tally.lock:
        for ack in sorted(tally.acks, key=lambda a: a.ended):
            if ack.began >= since:
                firsts.setdefault(ack.writer, ack)
    return list(firsts.values())

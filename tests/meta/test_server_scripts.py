"""The test servers' stop scripts, on throwaway processes in a private run directory.

Each ``scripts/servers/<name>/stop.sh`` is one call to ``stop_test_server`` in common.sh. Here
the "servers" are copies of ``sleep`` (or of ``bash``, for one that ignores signals) named like
the real ones, so ``ps`` shows the command name the scripts check, and
``CHATMEM_SERVERS_RUN`` points at a temporary directory: the shared test servers are never
touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "servers"
# Server name -> the command name its stop.sh looks for (as ps shows it: 15 characters).
SERVERS = {
    "postgres": "postgres",
    "mariadb": "mariadbd",
    "ferretdb": "ferretdb-launcher",
    "toxiproxy": "toxiproxy-server",
    "redis": "redis-server",
    "cassandra": "java",
    "neo4j": "java",
}

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("flock") is None, reason="needs Linux and flock"
)


def _default_interrupt_signals() -> None:
    # A shell without job control starts background commands with SIGINT and SIGQUIT
    # ignored, and children inherit that; a real server sets its own handlers, sleep does not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


class Fakes:
    """Throwaway server processes in a private run directory."""

    def __init__(self, root: Path) -> None:
        self.run = root / "run"
        self.bin = root / "bin"
        self.run.mkdir()
        self.bin.mkdir()
        self.env = {**os.environ, "CHATMEM_SERVERS_RUN": str(self.run)}
        self.env.pop("CHATMEM_SERVERS_LOCKED", None)
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, program: str, *args: str, source: str = "sleep") -> int:
        """Start ``program`` (a copy of ``source``) and write its pid where stop.sh looks."""
        binary = self.bin / program
        if not binary.exists():
            shutil.copy(shutil.which(source) or source, binary)
        process = subprocess.Popen(
            [str(binary), *(args or ("1000",))], preexec_fn=_default_interrupt_signals
        )
        self.processes.append(process)
        (self.run / name).mkdir(exist_ok=True)
        (self.run / name / f"{name}.pid").write_text(f"{process.pid}\n")
        return process.pid

    def stop(self, name: str, **env: str) -> tuple[str, float]:
        """Run the server's stop.sh; return its output and how long it took."""
        began = time.monotonic()
        result = subprocess.run(
            [str(SCRIPTS / name / "stop.sh")],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return result.stdout.strip(), time.monotonic() - began

    def exited(self, pid: int) -> bool:
        """The process ended (its exit status is collected here, as its parent)."""
        process = next(p for p in self.processes if p.pid == pid)
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[Fakes]:
    fakes = Fakes(tmp_path)
    try:
        yield fakes
    finally:
        fakes.close()


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_stop_script_stops_its_server_and_removes_the_pid_file(fakes: Fakes, name: str) -> None:
    if name == "redis":
        (fakes.run / "redis").mkdir()
        (fakes.run / "redis" / "port").write_text("1\n")  # nothing listens: SAVE fails fast
    pid = fakes.start(name, SERVERS[name])
    output, seconds = fakes.stop(name)
    assert output == f"{name}: stopped"
    assert fakes.exited(pid)
    assert not (fakes.run / name / f"{name}.pid").exists()
    assert seconds < 20  # well inside the 60 s grace of some: the first signal did it


def test_stop_script_leaves_alone_a_pid_file_that_names_another_program(fakes: Fakes) -> None:
    pid = fakes.start("postgres", "not-postgres")  # a reused pid: someone else's process
    output, _ = fakes.stop("postgres")
    assert output == "postgres: not running"
    assert not fakes.exited(pid)
    assert not (fakes.run / "postgres" / "postgres.pid").exists()


def test_stop_script_without_a_pid_file_or_with_a_dead_pid_is_a_no_op(fakes: Fakes) -> None:
    assert fakes.stop("mariadb")[0] == "mariadb: not running"
    pid = fakes.start("mariadb", "mariadbd")
    os.kill(pid, signal.SIGKILL)
    assert fakes.exited(pid)
    assert fakes.stop("mariadb")[0] == "mariadb: not running"
    assert not (fakes.run / "mariadb" / "mariadb.pid").exists()


def _ignores_term(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (its SigIgn mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def test_a_server_that_ignores_its_stop_signal_is_killed_after_the_grace_period(
    fakes: Fakes,
) -> None:
    # Toxiproxy's grace is 5 s; then TERM again, 5 s more, and KILL.
    ignore = 'trap "" TERM INT; while :; do sleep 0.2; done'
    pid = fakes.start("toxiproxy", "toxiproxy-server", "-c", ignore, source="bash")
    deadline = time.monotonic() + 10
    while not _ignores_term(pid):  # the trap is installed once the kernel says TERM is ignored
        assert time.monotonic() < deadline, "the server never ignored SIGTERM"
        time.sleep(0.01)
    output, seconds = fakes.stop("toxiproxy")
    assert output == "toxiproxy: stopped"
    assert fakes.exited(pid)
    assert 9.5 < seconds < 30


def _hold_lock(lock: Path) -> subprocess.Popen[bytes]:
    """Hold ``lock`` as a running start.sh would, until the process is terminated."""
    # flock(2) as the scripts' flock(1) takes it; the lock goes with the process.
    hold = "import fcntl, sys, time; f = open(sys.argv[1], 'w'); fcntl.flock(f, 2); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock)])
    deadline = time.monotonic() + 10
    # Held once a non-blocking attempt fails.
    while subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode == 0:
        assert time.monotonic() < deadline, "the lock holder did not take the lock"
        time.sleep(0.05)
    return holder


def test_stop_waits_for_the_start_lock(fakes: Fakes) -> None:
    # Cassandra's lock is outside its run directory, which a fresh start wipes.
    holder = _hold_lock(fakes.run / ".cassandra.lock")
    pid = fakes.start("cassandra", "java")
    stopping = subprocess.Popen(
        [str(SCRIPTS / "cassandra" / "stop.sh")], env=fakes.env, stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(1.5)
        assert stopping.poll() is None, "stop.sh did not wait for the start lock"
        assert not fakes.exited(pid), "stop.sh stopped the server while start.sh held the lock"
        holder.terminate()
        output, _ = stopping.communicate(timeout=30)
    finally:
        holder.kill()
        holder.wait()
        stopping.kill()
        stopping.communicate()
    assert output.strip() == "cassandra: stopped"
    assert fakes.exited(pid)


def test_stop_called_by_its_start_does_not_wait_for_the_lock(fakes: Fakes) -> None:
    # A start.sh that calls stop.sh while holding the lock says so; stop.sh must not wait.
    (fakes.run / "postgres").mkdir()
    holder = _hold_lock(fakes.run / "postgres" / ".lock")
    try:
        pid = fakes.start("postgres", "postgres")
        assert fakes.stop("postgres", CHATMEM_SERVERS_LOCKED="1")[0] == "postgres: stopped"
        assert fakes.exited(pid)
        assert holder.poll() is None  # stopped while the lock was still held
    finally:
        holder.terminate()
        holder.wait()


def test_redis_saves_a_snapshot_before_stopping_only_while_it_runs(fakes: Fakes) -> None:
    calls = fakes.run / "redis-cli.calls"
    cli = fakes.bin / "redis-cli"
    cli.write_text(f'#!/bin/sh\necho "$@" >>{calls}\n')
    cli.chmod(0o755)
    path = f"{fakes.bin}:{os.environ.get('PATH', '')}"
    (fakes.run / "redis").mkdir()
    (fakes.run / "redis" / "port").write_text("6390\n")
    pid = fakes.start("redis", "redis-server")
    assert fakes.stop("redis", PATH=path)[0] == "redis: stopped"
    assert fakes.exited(pid)
    assert fakes.stop("redis", PATH=path)[0] == "redis: not running"
    assert calls.read_text().splitlines() == ["-h 127.0.0.1 -p 6390 save"]


def test_redis_cluster_stop_stops_every_node(fakes: Fakes) -> None:
    # Six nodes, one pid file each (node-<port>.pid); one of them already gone.
    pids = [fakes.start("redis-cluster", "redis-server") for _ in range(6)]
    run = fakes.run / "redis-cluster"
    (run / "redis-cluster.pid").unlink()  # fakes.start's own name: not how nodes are kept
    for port, pid in zip(range(7101, 7107), pids, strict=True):
        (run / f"node-{port}.pid").write_text(f"{pid}\n")
    os.kill(pids[5], signal.SIGKILL)
    assert fakes.exited(pids[5])
    output, seconds = fakes.stop("redis-cluster")
    assert output == "redis-cluster: stopped"
    assert all(fakes.exited(pid) for pid in pids)
    assert not list(run.glob("node-*.pid"))
    assert seconds < 20
    assert fakes.stop("redis-cluster")[0] == "redis-cluster: not running"


def _fake_postmaster(fakes: Fakes, node: str, data: Path) -> int:
    """A stand-in for one node's postmaster: its command line names the node's data directory."""
    # bash outlives a SIGINT that its foreground child does not die of, unless it traps it.
    loop = 'trap "exit 0" INT; while :; do sleep 0.2; done'
    pid = fakes.start(
        "postgres-standby", "postgres", "-c", loop, "postgres", "-D", str(data), source="bash"
    )
    (fakes.run / "postgres-standby" / f"{node}.pid").write_text(f"{pid}\n")
    return pid


def test_postgres_standby_stop_stops_both_nodes(fakes: Fakes) -> None:
    run = fakes.run / "postgres-standby"
    pids = [_fake_postmaster(fakes, node, run / node / "data") for node in ("n1", "n2")]
    output, seconds = fakes.stop("postgres-standby")
    assert output == "postgres-standby: stopped"
    assert all(fakes.exited(pid) for pid in pids)
    assert not list(run.glob("n*.pid"))
    assert seconds < 20
    assert fakes.stop("postgres-standby")[0] == "postgres-standby: not running"


def test_postgres_standby_stop_leaves_alone_a_process_of_another_data_directory(
    fakes: Fakes,
) -> None:
    # A reused pid: a postgres, but not this node's (another cluster's data directory).
    pid = _fake_postmaster(fakes, "n1", fakes.run / "elsewhere" / "data")
    assert fakes.stop("postgres-standby")[0] == "postgres-standby: not running"
    assert not fakes.exited(pid)
    assert not (fakes.run / "postgres-standby" / "n1.pid").exists()

"""Private database servers for the durability tests: started, killed and restarted.

Each server gets a free port and its own run directory under /tmp, so killing it never
touches the shared test servers. The project's start scripts start them (with
``CHATMEM_KEEP_DATA=1`` for a restart on the same data); Redis is started directly because
its script runs without persistence by design, and a durability test needs the AOF.

A crash is SIGKILL to the pid in the server's pidfile. When that pid leads its own process
group (PostgreSQL's postmaster and its backends), the whole group is killed at once: the
server dies as a whole, with no process left to finish a write on its behalf.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts" / "servers"


def in_ci() -> bool:
    """Whether this is a CI run, where every server must start (no skips)."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


# Private servers listen below the kernel's ephemeral range (32768-60999 on Linux): a port
# from that range can be taken by any client connection's local end while a killed server
# is down, and its restart on the same port then fails to bind. Clear of the fixed ports of
# scripts/servers (below 28000, and Redis's 63799 above the range).
PRIVATE_PORTS = range(28000, 32000)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1, outside the ephemeral range, that nothing holds now."""
    for port in random.sample(PRIVATE_PORTS, 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ServerStartError(f"no free port in {PRIVATE_PORTS}")


def _state(pid: int) -> str | None:
    """The process state letter from /proc (``Z`` for a zombie), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rpartition(")")[2].split()[0]


def wait_gone(pid: int, timeout: float = 20.0) -> None:
    """Wait until ``pid`` has exited and been reaped.

    The start scripts refuse to reuse data while the old pid still exists, and a zombie
    still exists: PID 1 on this kind of machine reaps orphans only every second or two.
    """
    deadline = time.monotonic() + timeout
    while _state(pid) is not None:
        if time.monotonic() > deadline:
            raise AssertionError(f"pid {pid} still exists {timeout:.0f}s after SIGKILL")
        time.sleep(0.05)


class PrivateServer:
    """One private server: start (fresh or on kept data), SIGKILL, stop, clean up."""

    def __init__(self, name: str, url: str, pidfile: Path, run_dir: Path) -> None:
        self.name = name
        self.url = url
        self.pidfile = pidfile
        self.run_dir = run_dir
        self.start_seconds = 0.0  # how long the first (fresh) start took

    # Subclasses start the process.
    def _start(self, keep_data: bool) -> None:
        raise NotImplementedError

    def start(self, *, keep_data: bool = False) -> float:
        """Start the server and return how long it took to answer, in seconds."""
        started = time.monotonic()
        self._start(keep_data)
        return time.monotonic() - started

    def pid(self) -> int:
        return int(self.pidfile.read_text().split()[0])

    def _ours(self, pid: int) -> bool:
        """Whether ``pid`` is alive and is this server (its command line names our run
        directory), so a stale pidfile can never get another process killed."""
        if _state(pid) in (None, "Z"):
            return False
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            return False
        return str(self.run_dir).encode() in command

    def kill(self) -> int:
        """SIGKILL the server (its whole process group when it leads one); return the pid."""
        pid = self.pid()
        assert self._ours(pid), f"{self.name} (pid {pid}) is not running"
        self._sigkill(pid)
        wait_gone(pid)
        return pid

    def _sigkill(self, pid: int) -> None:
        if os.getpgid(pid) == pid and pid != os.getpgrp():
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        self._reap(pid)

    def _reap(self, pid: int) -> None:
        """Collect the exit status of a server this process started itself."""

    def stop(self) -> None:
        """Kill the server if it runs and delete its data; never raises.

        The data is thrown away, so there is no clean shutdown to wait for (Cassandra's
        drain alone takes seconds).
        """
        try:
            pid = self.pid()
            if self._ours(pid):
                self._sigkill(pid)
        except Exception:  # no pidfile, already gone: cleanup must not hide a failure
            pass
        finally:
            shutil.rmtree(self.run_dir, ignore_errors=True)


class ScriptServer(PrivateServer):
    """A server started by ``scripts/servers/<script>/start.sh`` on private ports."""

    def __init__(
        self,
        script: str,
        *,
        name: str,
        url: str,
        pidfile: str,
        run_dir: Path,
        env: dict[str, str],
        timeout: float = 180.0,
    ) -> None:
        super().__init__(name, url, run_dir / script / pidfile, run_dir)
        self.script = script
        self.timeout = timeout
        self.env = {**os.environ, "CHATMEM_SERVERS_RUN": str(run_dir), **env}

    def _start(self, keep_data: bool) -> None:
        env = {**self.env, "CHATMEM_KEEP_DATA": "1" if keep_data else "0"}
        result = subprocess.run(
            ["bash", str(SCRIPTS / self.script / "start.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        if result.returncode != 0:
            raise ServerStartError(
                f"{self.script}/start.sh exited with {result.returncode}:\n"
                f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
            )


class RedisAofServer(PrivateServer):
    """redis-server with the append-only file on and fsynced before every reply."""

    def __init__(self, run_dir: Path) -> None:
        self.port = free_port()
        super().__init__(
            "redis", f"redis://127.0.0.1:{self.port}/0", run_dir / "redis.pid", run_dir
        )
        self._process: subprocess.Popen[bytes] | None = None

    def _start(self, keep_data: bool) -> None:
        if not keep_data:
            shutil.rmtree(self.run_dir / "data", ignore_errors=True)
        (self.run_dir / "data").mkdir(parents=True, exist_ok=True)
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerStartError("redis-server is not installed")
        # appendfsync always: the AOF is written and fsynced before the reply is sent.
        # No RDB save points, so a restart can only recover through the AOF.
        command = [
            binary,
            "--bind", "127.0.0.1", "--port", str(self.port), "--protected-mode", "no",
            "--save", "", "--appendonly", "yes", "--appendfsync", "always",
            "--dir", str(self.run_dir / "data"),
            "--logfile", str(self.run_dir / "redis.log"), "--daemonize", "no",
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.pidfile.write_text(str(self._process.pid))
        deadline = time.monotonic() + 30
        while not self._answers():
            if self._process.poll() is not None:
                log = (self.run_dir / "redis.log").read_text(errors="replace")[-2000:]
                raise ServerStartError(f"redis-server exited during startup:\n{log}")
            if time.monotonic() > deadline:
                raise ServerStartError("redis-server did not answer PING within 30 s")
            time.sleep(0.05)

    def _answers(self) -> bool:
        # Until the AOF is loaded Redis answers PING with -LOADING, not +PONG.
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def _ours(self, pid: int) -> bool:
        # redis-server rewrites its command line, so ask the Popen handle instead.
        return (
            self._process is not None and self._process.pid == pid and self._process.poll() is None
        )

    def _reap(self, pid: int) -> None:
        if self._process is not None and self._process.pid == pid:
            self._process.wait(timeout=10)


class ServerStartError(RuntimeError):
    """A private server did not start."""


def new_run_dir(name: str) -> Path:
    """A fresh run directory that the database's own OS user can enter."""
    path = Path(tempfile.mkdtemp(prefix=f"chatmem-durability-{name}-", dir="/tmp"))
    path.chmod(0o755)  # postgres and mysql users must reach their data under it
    return path


def private_server(name: str) -> PrivateServer:
    """Build (not start) the private server for a backend."""
    run_dir = new_run_dir(name)
    port = free_port()
    if name == "postgresql":
        return ScriptServer(
            "postgres",
            name=name,
            url=f"postgresql+psycopg://test:test@127.0.0.1:{port}/testdb",
            pidfile="postgres.pid",
            run_dir=run_dir,
            env={"CHATMEM_POSTGRES_PORT": str(port)},
        )
    if name == "mariadb":
        return ScriptServer(
            "mariadb",
            name=name,
            url=f"mysql+pymysql://test:test@127.0.0.1:{port}/testdb?charset=utf8mb4",
            pidfile="mariadb.pid",
            run_dir=run_dir,
            env={"CHATMEM_MARIADB_PORT": str(port)},
        )
    if name == "mongodb":
        return ScriptServer(
            "ferretdb",
            name=name,
            url=f"mongodb://127.0.0.1:{port}/chatmem_durability?serverSelectionTimeoutMS=3000",
            pidfile="ferretdb.pid",
            run_dir=run_dir,
            env={"CHATMEM_FERRETDB_PORT": str(port)},
        )
    if name == "cassandra":
        return ScriptServer(
            "cassandra",
            name=name,
            url=f"cassandra://127.0.0.1:{port}/chatmem_durability",
            pidfile="cassandra.pid",
            run_dir=run_dir,
            env={
                "CHATMEM_CASSANDRA_PORT": str(port),
                "CHATMEM_CASSANDRA_STORAGE_PORT": str(free_port()),
                "CHATMEM_CASSANDRA_TIMEOUT": "240",
                "CHATMEM_CASSANDRA_DURABLE": "1",
            },
            timeout=300,
        )
    if name == "neo4j":
        return ScriptServer(
            "neo4j",
            name=name,
            url=f"bolt://127.0.0.1:{port}",
            pidfile="neo4j.pid",
            run_dir=run_dir,
            env={"CHATMEM_NEO4J_PORT": str(port), "CHATMEM_NEO4J_TIMEOUT": "240"},
            timeout=300,
        )
    if name == "redis":
        return RedisAofServer(run_dir)
    raise ValueError(f"no private server for {name!r}")


def start_or_skip(server: PrivateServer) -> float:
    """Start ``server`` fresh; skip the test if it cannot start locally, fail in CI."""
    if os.environ.get("CHATMEM_SKIP_SERVERS") == "1":
        pytest.skip(f"CHATMEM_SKIP_SERVERS=1: this run starts no {server.name} server")
    try:
        return server.start()
    except (ServerStartError, subprocess.TimeoutExpired, OSError) as exc:
        server.stop()
        message = f"private {server.name} server did not start: {exc}"
        if in_ci():
            pytest.fail(message + "; in CI every server must start")
        pytest.skip(message)

"""Fault test: PostgreSQL stops while a writer appends, then comes back with its data.

It runs a private PostgreSQL (its own port and data directory, through the project's
start/stop scripts) so stopping it never disturbs the shared test server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmem import UserMessage
from chatmem.exceptions import RepositoryConnectionError
from chatmem_repositories.sql import AsyncSqlChatMemoryRepository, SqlChatMemoryRepository
from tests.support.servers import server_url

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts" / "servers" / "postgres"
PORT = int(os.environ.get("CHATMEM_FAULT_POSTGRES_PORT", "25439"))
URL = f"postgresql+psycopg://test:test@127.0.0.1:{PORT}/testdb"
BOUND_SECONDS = 15.0  # the writer must learn of the outage within this
STOP_AFTER = 20  # acknowledged appends before the server is stopped under the writer


class PrivatePostgres:
    def __init__(self, run_dir: str) -> None:
        self.env = {
            **os.environ,
            "CHATMEM_POSTGRES_PORT": str(PORT),
            "CHATMEM_SERVERS_RUN": run_dir,
        }

    def _run(self, script: str, keep: bool = False) -> None:
        env = {**self.env, "CHATMEM_KEEP_DATA": "1" if keep else "0"}
        subprocess.run(
            ["bash", str(SCRIPTS / script)], env=env, check=True, capture_output=True, timeout=120
        )

    def start(self, *, keep_data: bool = False) -> None:
        self._run("start.sh", keep_data)

    def stop(self) -> None:
        self._run("stop.sh")


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    server_url("postgresql")  # skip locally / fail in CI exactly like the other SQL tests
    run_dir = tempfile.mkdtemp(prefix="chatmem-fault-pg-", dir="/tmp")
    os.chmod(run_dir, 0o755)  # the postgres OS user must reach its data directory
    server = PrivatePostgres(run_dir)
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)


def _stop_after(
    server: PrivatePostgres, acknowledged: list[str], stopped_at: list[float]
) -> threading.Thread:
    """Stop ``server`` once the writer has had ``STOP_AFTER`` appends acknowledged."""

    def stop() -> None:
        deadline = time.monotonic() + 60
        while len(acknowledged) < STOP_AFTER and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped_at.append(time.monotonic())
        server.stop()

    thread = threading.Thread(target=stop)
    thread.start()
    return thread


def _write_until_error(
    repository: SqlChatMemoryRepository, cid: str, acknowledged: list[str]
) -> None:
    deadline = time.monotonic() + 60  # bounded even if the error never comes
    while time.monotonic() < deadline:
        message = UserMessage(f"m{len(acknowledged)}")
        repository.append(cid, [message])
        acknowledged.append(message.id)


async def _async_write_until_error(
    repository: AsyncSqlChatMemoryRepository, cid: str, acknowledged: list[str]
) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        message = UserMessage(f"m{len(acknowledged)}")
        await repository.append(cid, [message])
        acknowledged.append(message.id)


def test_writer_gets_connection_error_then_nothing_acknowledged_is_lost(
    postgres: PrivatePostgres,
) -> None:
    cid = f"fault-{uuid.uuid4()}"
    acknowledged: list[str] = []
    stopped_at: list[float] = []
    repository = SqlChatMemoryRepository.from_url(
        URL, initialize_schema="always", connect_timeout=3
    )
    try:
        repository.append(cid, [UserMessage("warm-up")])
        stopper = _stop_after(postgres, acknowledged, stopped_at)
        with pytest.raises(RepositoryConnectionError) as caught:
            _write_until_error(repository, cid, acknowledged)
        failed_at = time.monotonic()
        stopper.join()
        assert stopped_at, "the writer failed before the server was stopped"
        latency = failed_at - stopped_at[0]
        print(f"\nfault: {len(acknowledged)} appends acknowledged; error {latency:.2f}s after stop")
        assert latency < BOUND_SECONDS
        assert caught.value.backend == "postgresql"
        assert "test:test" not in str(caught.value)

        postgres.start(keep_data=True)
        # The same repository recovers: its pool reconnects.
        stored = {m.id for m in repository.find_by_conversation_id(cid)}
        assert set(acknowledged) <= stored
        assert len(acknowledged) >= STOP_AFTER
    finally:
        repository.close()


async def test_async_writer_gets_connection_error_then_nothing_acknowledged_is_lost(
    postgres: PrivatePostgres,
) -> None:
    cid = f"fault-{uuid.uuid4()}"
    acknowledged: list[str] = []
    stopped_at: list[float] = []
    repository = AsyncSqlChatMemoryRepository.from_url(
        URL, initialize_schema="always", connect_timeout=3
    )
    try:
        await repository.append(cid, [UserMessage("warm-up")])
        stopper = _stop_after(postgres, acknowledged, stopped_at)
        with pytest.raises(RepositoryConnectionError):
            await _async_write_until_error(repository, cid, acknowledged)
        failed_at = time.monotonic()
        stopper.join()
        assert stopped_at
        latency = failed_at - stopped_at[0]
        print(f"\nasync fault: {len(acknowledged)} acknowledged; error {latency:.2f}s after stop")
        assert latency < BOUND_SECONDS
        postgres.start(keep_data=True)
        stored = {m.id for m in await repository.find_by_conversation_id(cid)}
        assert set(acknowledged) <= stored
        assert len(acknowledged) >= STOP_AFTER
    finally:
        await repository.aclose()

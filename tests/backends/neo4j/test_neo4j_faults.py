"""Neo4j going away mid-run, and how many network round trips each call costs.

Neo4j takes seconds to restart, so instead of stopping the shared test server these tests
put a small TCP proxy (127.0.0.1, random port) between the driver and the server and kill
it: from the client's side that is exactly a server that went away (open connections are
cut, new ones are refused). The same proxy counts round trips: each time the client sends
after the server has answered is one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from chatmem.exceptions import RepositoryConnectionError
from chatmem.memory import AsyncMessageWindowChatMemory
from chatmem.messages import AssistantMessage, UserMessage
from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("neo4j")

# Retry budget for the fault tests: the error must come within about this long.
_RETRY_SECONDS = 2.0
_BOUND_SECONDS = _RETRY_SECONDS + 6.0
# How long a test waits for something it only observes (a writer making progress, a thread
# ending) before it fails saying what it was waiting for, instead of hanging the run.
_WAIT_SECONDS = 30.0


def _wait_until(condition: Callable[[], bool], what: str, seconds: float = _WAIT_SECONDS) -> None:
    """Poll ``condition`` until it holds; fail the test naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {seconds:.0f} s waiting for {what}")
        time.sleep(0.01)


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a server; can be killed; counts round trips."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._client_turn: dict[int, bool] = {}
        self.round_trips = 0
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            with self._lock:
                if self._stopped.is_set():
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
                self._client_turn[id(client)] = False
                for source, sink, outbound in ((client, upstream, True), (upstream, client, False)):
                    thread = threading.Thread(
                        target=self._pipe, args=(source, sink, outbound, id(client)), daemon=True
                    )
                    self._threads.append(thread)
                    thread.start()

    def _pipe(self, source: socket.socket, sink: socket.socket, outbound: bool, key: int) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if outbound and not self._client_turn[key]:
                        self.round_trips += 1
                    self._client_turn[key] = outbound
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def reset_count(self) -> None:
        """Start counting from zero."""
        with self._lock:
            self.round_trips = 0

    def kill(self) -> None:
        """Refuse new connections and cut the open ones, like a server that died."""
        self._stopped.set()
        self._listener.close()
        # The accept loop wakes every 0.1 s; a thread still alive after 5 s is a bug here.
        self._accepting.join(timeout=5)
        assert not self._accepting.is_alive(), "the proxy's accept loop did not stop"
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)
        stuck = sum(thread.is_alive() for thread in self._threads)
        assert not stuck, f"{stuck} proxy pipe threads still run after their sockets were shut"
        for sock in sockets:
            sock.close()


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    parts = urlsplit(server_url("neo4j"))
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 7687)
    try:
        yield proxy
    finally:
        proxy.kill()


def _proxied_url(proxy: TcpProxy) -> str:
    return f"bolt://127.0.0.1:{proxy.port}"


_FAST_FAIL = {
    "max_transaction_retry_time": _RETRY_SECONDS,
    "connect_timeout": 2,
    "connection_acquisition_timeout": 4,
}


def test_server_gone_mid_run_raises_connection_error_in_bounded_time(proxy: TcpProxy) -> None:
    cid = f"neo4j-fault-{uuid.uuid4()}"
    repository = Neo4jChatMemoryRepository.from_url(_proxied_url(proxy), **_FAST_FAIL)
    errors: list[BaseException] = []
    appended = 0
    killed_at: list[float] = []
    failed_at: list[float] = []

    def writer() -> None:
        nonlocal appended
        try:
            for i in range(100_000):
                repository.append(cid, [UserMessage(f"m{i}")])
                appended += 1
        except BaseException as exc:  # the test inspects it below
            failed_at.append(time.monotonic())
            errors.append(exc)

    thread = threading.Thread(target=writer)
    try:
        thread.start()
        _wait_until(lambda: appended >= 20 or bool(errors), "20 appends before the fault")
        assert not errors, f"the writer failed before the server went away: {errors[0]!r}"
        killed_at.append(time.monotonic())
        proxy.kill()
        thread.join(timeout=_BOUND_SECONDS + 10)
        assert not thread.is_alive(), "append hung after the server went away"
    finally:
        repository.close()
    assert len(errors) == 1
    assert isinstance(errors[0], RepositoryConnectionError)
    assert errors[0].backend == "neo4j"
    assert errors[0].__cause__ is not None
    assert failed_at[0] - killed_at[0] < _BOUND_SECONDS
    with Neo4jChatMemoryRepository.from_url(server_url("neo4j")) as direct:
        stored = direct.find_by_conversation_id(cid)
        # Nothing acknowledged was lost; at most the in-flight append may have landed.
        assert appended <= len(stored) <= appended + 1
        direct.delete_by_conversation_id(cid)


async def test_async_server_gone_mid_run_raises_connection_error(proxy: TcpProxy) -> None:
    cid = f"neo4j-fault-{uuid.uuid4()}"
    async with AsyncNeo4jChatMemoryRepository.from_url(
        _proxied_url(proxy), **_FAST_FAIL
    ) as repository:
        for i in range(5):
            await repository.append(cid, [UserMessage(f"m{i}")])
        reads: list[int] = []
        reader = asyncio.ensure_future(_read_forever(repository, cid, reads))
        deadline = time.monotonic() + _WAIT_SECONDS
        while len(reads) < 3 and not reader.done():
            assert time.monotonic() < deadline, "the reader made no 3 reads before the fault"
            await asyncio.sleep(0.01)
        assert not reader.done(), f"the reader stopped before the fault: {reader!r}"
        started = time.monotonic()
        proxy.kill()
        with pytest.raises(RepositoryConnectionError) as caught:
            await asyncio.wait_for(reader, timeout=_BOUND_SECONDS + 10)
        assert time.monotonic() - started < _BOUND_SECONDS
        assert caught.value.backend == "neo4j"
    async with AsyncNeo4jChatMemoryRepository.from_url(server_url("neo4j")) as direct:
        await direct.delete_by_conversation_id(cid)


async def _read_forever(
    repository: AsyncNeo4jChatMemoryRepository, cid: str, reads: list[int]
) -> None:
    # Ends only by an error; the caller bounds it with asyncio.wait_for.
    while True:
        await repository.find_recent(cid, 20)
        reads.append(1)


def test_server_down_at_start_fails_fast() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    # Nothing listens on the port now: connections are refused.
    url = f"bolt://127.0.0.1:{port}"
    with Neo4jChatMemoryRepository.from_url(url, **_FAST_FAIL) as repository:
        started = time.monotonic()
        with pytest.raises(RepositoryConnectionError, match="unavailable"):
            repository.find_recent("anything", 5)
        assert time.monotonic() - started < _BOUND_SECONDS


# -- round trips ----------------------------------------------------------------------------


async def test_round_trips_per_memory_read_and_append(proxy: TcpProxy) -> None:
    cid = f"neo4j-trips-{uuid.uuid4()}"
    async with AsyncNeo4jChatMemoryRepository.from_url(
        _proxied_url(proxy), database="neo4j"
    ) as repository:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
        await memory.add(cid, [UserMessage("warm up"), AssistantMessage("ok")])
        await memory.get(cid)
        proxy.reset_count()
        await repository.append(cid, [UserMessage("one")])
        append_trips = proxy.round_trips
        proxy.reset_count()
        await memory.get(cid)
        read_trips = proxy.round_trips
        await repository.delete_by_conversation_id(cid)
    # One auto-commit statement per append (RUN and PULL sent together), and one per memory
    # read (find_window: the window and the system message together), whatever the history.
    assert append_trips == 1, append_trips
    assert read_trips == 1, read_trips

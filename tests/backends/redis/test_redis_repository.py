"""Redis-specific behaviour on a real server: key layout, TTL, faults, round trips, options."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.crc import key_slot

from chatmem import (
    AssistantMessage,
    Message,
    MessageType,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem.conversation_ids import scoped_conversation_id
from chatmem.exceptions import (
    ConfigurationError,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
)
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository
from chatmem_repositories.redis._schema import KeyLayout, expiry_member
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[3]
SERVERS = ROOT / "scripts" / "servers" / "redis"
PREFIX = f"chatmem-backend-{uuid.uuid4().hex[:8]}"
LAYOUT = KeyLayout(PREFIX)
PIDFILE = (
    Path(os.environ.get("CHATMEM_SERVERS_RUN", "/tmp/chatmem-servers")) / "redis" / "redis.pid"
)


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as client:
        yield client


@pytest.fixture
def repository(redis_url: str) -> Iterator[RedisChatMemoryRepository]:
    with RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX) as repo:
        yield repo


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _conversation_keys_in_server(raw: redis.Redis, conversation_id: str) -> list[bytes]:
    pattern = _glob_escape(LAYOUT.conversation_tag(conversation_id)) + ":*"
    return list(raw.scan_iter(match=pattern, count=1000))


# -- key layout -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "conversation_id", ["plain", "{user}:conv", "a}b{c", "%7B", "ü 🎉", "x" * 512]
)
def test_keys_of_one_conversation_share_one_cluster_slot(
    repository: RedisChatMemoryRepository, raw: redis.Redis, conversation_id: str
) -> None:
    repository.append(
        conversation_id, [SystemMessage("s"), UserMessage("u"), AssistantMessage("a")]
    )
    try:
        keys = _conversation_keys_in_server(raw, conversation_id)
        assert len(keys) >= 8
        assert len({key_slot(k) for k in keys}) == 1
        tag = LAYOUT.conversation_tag(conversation_id)
        assert tag.count("{") == 1
        assert tag.count("}") == 1
    finally:
        repository.delete_by_conversation_id(conversation_id)
    assert _conversation_keys_in_server(raw, conversation_id) == []


def test_escaping_keeps_lookalike_ids_apart(repository: RedisChatMemoryRepository) -> None:
    base = f"esc-{uuid.uuid4().hex[:6]}"
    ids = [base + "{", base + "%7B", base + "%257B", base + "}"]
    for cid in ids:
        repository.append(cid, [UserMessage(cid)])
    try:
        for cid in ids:
            assert [m.text for m in repository.find_by_conversation_id(cid)] == [cid]  # type: ignore[union-attr]
    finally:
        for cid in ids:
            repository.delete_by_conversation_id(cid)


# -- TTL ----------------------------------------------------------------------------------------


def test_two_second_ttl_removes_messages_system_message_and_index_entries(
    redis_url: str, raw: redis.Redis
) -> None:
    owner = f"ttl-owner-{uuid.uuid4().hex[:6]}"
    cid = scoped_conversation_id(owner, "chat")
    with RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX, ttl=2) as repo:
        repo.append(cid, [SystemMessage("be brief"), UserMessage("hi"), AssistantMessage("yo")])
        keys = LAYOUT.conversation(cid)
        live = [k for k in keys if raw.exists(k)]
        assert len(live) == 10  # every key but the (empty) tool set
        assert all(0 < raw.pttl(k) <= 2000 for k in live)  # every key expires, as one
        assert raw.zscore(LAYOUT.conversations, cid) is not None
        assert raw.zscore(LAYOUT.owner(owner), cid) is not None
        assert raw.zscore(LAYOUT.expiry, expiry_member(cid, owner)) is not None

        # Redis expires the keys (its clock decides): wait for it, with a deadline.
        wait_until(
            lambda: sum(raw.exists(k) for k in keys) == 0,  # messages, system message, counters
            within=15,
            reason="Redis expires every key of a conversation with a 2 s TTL",
        )
        assert _conversation_keys_in_server(raw, cid) == []
        assert repo.find_system_message(cid) is None
        assert repo.find_recent(cid, 10) == []
        assert repo.list_conversations(owner=owner).conversation_ids == []
        # The read above cleaned the indexes: no dead entry is left behind.
        assert raw.zscore(LAYOUT.conversations, cid) is None
        assert raw.zscore(LAYOUT.owner(owner), cid) is None
        assert raw.zscore(LAYOUT.expiry, expiry_member(cid, owner)) is None


def test_purge_expired_cleans_the_index_without_a_listing(redis_url: str, raw: redis.Redis) -> None:
    cid = f"purge-{uuid.uuid4()}"
    with RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX, ttl=0.5) as repo:
        repo.append(cid, [UserMessage("x")])
        # The expiry index is scored by the server's TIME: purge until it says expired.
        wait_until(
            lambda: repo.purge_expired() >= 1,
            within=15,
            reason="a purge finds the conversation expired after its 0.5 s TTL",
        )
        assert raw.zscore(LAYOUT.conversations, cid) is None


def test_append_without_ttl_keeps_the_conversations_expiry_on_every_key(
    redis_url: str, raw: redis.Redis
) -> None:
    cid = f"mixed-{uuid.uuid4()}"
    with (
        RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX, ttl=60) as expiring,
        RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX) as forever,
    ):
        expiring.append(cid, [UserMessage("u")])
        forever.append(cid, [SystemMessage("s")])  # creates the system set
        try:
            ttls = [raw.pttl(k) for k in LAYOUT.conversation(cid) if raw.exists(k)]
            assert ttls
            assert all(0 < t <= 60_000 for t in ttls)
        finally:
            forever.delete_by_conversation_id(cid)


# -- history queries ------------------------------------------------------------------------------


def test_text_search_resumes_past_the_scan_budget(redis_url: str) -> None:
    cid = f"budget-{uuid.uuid4()}"
    with RedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, history_scan_budget=7
    ) as repo:
        messages = [
            UserMessage(f"msg {i}" + (" NEEDLE" if i % 25 == 24 else "")) for i in range(100)
        ]
        repo.append(cid, messages)
        try:
            hits = repo.find_history(cid, text="needle", limit=3)
            assert [s.message.id for s in hits] == [messages[i].id for i in (24, 49, 74)]
            rest = repo.find_history(cid, text="needle", after=hits[-1].position)
            assert [s.message.id for s in rest] == [messages[99].id]
        finally:
            repo.delete_by_conversation_id(cid)


@pytest.mark.parametrize("budget", [3, 5000])  # scan fallback, then the time index
def test_time_range_with_and_without_the_time_index(redis_url: str, budget: int) -> None:
    cid = f"time-{uuid.uuid4()}"
    t0 = datetime(2026, 5, 1, tzinfo=UTC)
    # Clock order differs from append order on purpose: results follow positions.
    offsets = [5, 1, 4, 2, 3, 0, 6]
    messages = [UserMessage(f"m{o}", created_at=t0 + timedelta(seconds=o)) for o in offsets]
    with RedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, history_scan_budget=budget
    ) as repo:
        stored = repo.append(cid, messages)
        try:
            found = repo.find_history(
                cid, since=t0 + timedelta(seconds=1), until=t0 + timedelta(seconds=5)
            )
            assert [s.message.text for s in found] == ["m1", "m4", "m2", "m3"]  # type: ignore[union-attr]
            later = repo.find_history(
                cid, since=t0 + timedelta(seconds=1), after=stored[2].position, limit=2
            )
            assert [s.message.text for s in later] == ["m2", "m3"]  # type: ignore[union-attr]
            users = repo.find_history(cid, types=[MessageType.USER], after=stored[4].position)
            assert [s.message.text for s in users] == ["m0", "m6"]  # type: ignore[union-attr]
        finally:
            repo.delete_by_conversation_id(cid)


# -- round trips -------------------------------------------------------------------------------


class CountingRedis(redis.Redis):
    """Counts the commands sent, one per round trip (no pipelines are used)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[str] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.commands.append(str(args[0]))
        return super().execute_command(*args, **options)


def test_round_trips_per_read_and_append_do_not_grow_with_history(redis_url: str) -> None:
    client = CountingRedis.from_url(redis_url)
    try:
        repo = RedisChatMemoryRepository(client, key_prefix=PREFIX)
        memory = MessageWindowChatMemory(repo, max_messages=20)
        counts = {}
        for length in (40, 5000):
            cid = f"trips-{length}-{uuid.uuid4()}"
            history = [
                UserMessage(f"q{i}") if i % 2 == 0 else AssistantMessage(f"a{i}")
                for i in range(length)
            ]
            for start in range(0, length, 1000):
                repo.append(cid, history[start : start + 1000])
            repo.append(cid, [SystemMessage("be brief")])
            memory.get(cid)  # scripts are loaded by now
            client.commands.clear()
            view = memory.get(cid)
            read = list(client.commands)
            client.commands.clear()
            memory.add(cid, UserMessage("next"))
            append = list(client.commands)
            assert 10 < len(view) <= 20
            assert isinstance(view[0], SystemMessage)
            counts[length] = (read, append)
            repo.delete_by_conversation_id(cid)
        assert counts[40] == counts[5000]
        read, append = counts[40]
        assert read == ["EVALSHA"]  # the system message and the window, one script
        assert append == ["EVALSHA"]
        repo.close()  # not owned: the client stays open
        assert client.ping()
    finally:
        client.close()


# -- bulk appends ---------------------------------------------------------------------------------


def _bulk(tag: str, conversations: int, per: int) -> list[tuple[str, list[Message]]]:
    return [
        (
            f"bulk-{tag}-{c}",
            [(UserMessage if i % 2 == 0 else AssistantMessage)(f"{c}:{i}") for i in range(per)],
        )
        for c in range(conversations)
    ]


def test_one_append_of_2500_messages_keeps_order_past_the_script_chunks(
    repository: RedisChatMemoryRepository,
) -> None:
    cid = f"big-{uuid.uuid4().hex[:8]}"
    messages: list[Message] = [SystemMessage("rules")]
    messages += [UserMessage(f"m{i}") for i in range(2499)]
    messages.insert(1200, messages[7])  # a repeated id inside the batch is stored once
    stored = repository.append(cid, messages)
    assert [s.position for s in stored] == list(range(1, 2501))
    assert [s.message for s in stored] == messages[:1200] + messages[1201:]
    assert repository.find_by_conversation_id(cid) == messages[:1200] + messages[1201:]
    assert repository.append(cid, messages[2000:]) == []
    recent = repository.find_recent(cid, 3)
    assert [s.message.text for s in recent] == ["m2496", "m2497", "m2498"]  # type: ignore[union-attr]
    assert repository.find_system_message(cid).message.text == "rules"  # type: ignore[union-attr]
    repository.delete_by_conversation_id(cid)


def test_append_many_writes_every_conversation_once_in_order(
    repository: RedisChatMemoryRepository, raw: redis.Redis
) -> None:
    pairs = _bulk(uuid.uuid4().hex[:8], 30, 40)
    first, rest = [(cid, ms[:25]) for cid, ms in pairs], [(cid, ms[25:]) for cid, ms in pairs]
    raw.script_flush()  # the pipeline meets NOSCRIPT and sends those scripts as EVAL
    stored = repository.append_many([*first, (pairs[0][0], []), *rest])
    assert [len(s) for s in stored] == [25] * 30 + [0] + [15] * 30
    assert [s.position for s in stored[0]] == list(range(1, 26))
    assert [s.position for s in stored[31]] == list(range(26, 41))
    assert repository.append_many(pairs) == [[]] * 30  # idempotent: every id is known
    for cid, messages in pairs:
        assert repository.find_by_conversation_id(cid) == messages
    listed = repository.list_conversations(limit=1000).conversation_ids
    assert {cid for cid, _ in pairs} <= set(listed)
    assert repository.append_many([]) == []
    for cid, _ in pairs:
        repository.delete_by_conversation_id(cid)


def test_a_server_without_the_scripts_gets_them_again(
    repository: RedisChatMemoryRepository, raw: redis.Redis
) -> None:
    cid = f"noscript-{uuid.uuid4().hex[:8]}"
    repository.append(cid, [UserMessage("before")])
    raw.script_flush()  # as after a restart or a failover: every EVALSHA meets NOSCRIPT
    assert [s.position for s in repository.append(cid, [UserMessage("after")])] == [2]
    raw.script_flush()
    system, window = repository.find_window(cid, 5)
    assert system is None
    assert [s.message.text for s in window] == ["before", "after"]  # type: ignore[union-attr]
    assert raw.script_exists(repository._scripts["WINDOW"].sha) == [True]
    repository.delete_by_conversation_id(cid)


def test_append_many_with_a_bad_id_writes_nothing(repository: RedisChatMemoryRepository) -> None:
    pairs = _bulk(uuid.uuid4().hex[:8], 2, 2)
    with pytest.raises(ConfigurationError):
        repository.append_many([*pairs, ("", [UserMessage("lost")])])
    assert all(repository.find_by_conversation_id(cid) == [] for cid, _ in pairs)


async def test_async_append_many(redis_url: str) -> None:
    pairs = _bulk(uuid.uuid4().hex[:8], 5, 4)
    async with AsyncRedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX) as repo:
        stored = await repo.append_many(pairs)
        assert [[s.message for s in batch] for batch in stored] == [ms for _, ms in pairs]
        assert await repo.append_many(pairs) == [[]] * 5
        for cid, messages in pairs:
            assert await repo.find_by_conversation_id(cid) == messages
            await repo.delete_by_conversation_id(cid)


# -- faults ---------------------------------------------------------------------------------------


class _ClosedUnderneath(redis.asyncio.Connection):
    """A connection that another task closes while this one uses it, once when armed.

    redis-py can close a cluster connection during a failover or a resharding while a call
    is using it; the call then fails inside redis-py with an AttributeError on ``None``.
    """

    armed = 0

    async def _send_packed_command(self, command: Any) -> None:
        if _ClosedUnderneath.armed:
            _ClosedUnderneath.armed -= 1
            writer, self._writer = self._writer, None  # what a concurrent disconnect() leaves
            if writer is not None:
                writer.close()
        await super()._send_packed_command(command)


async def test_a_connection_closed_while_in_use_is_a_lost_connection(redis_url: str) -> None:
    pool = redis.asyncio.ConnectionPool.from_url(redis_url, connection_class=_ClosedUnderneath)
    async with AsyncRedisChatMemoryRepository(
        redis.asyncio.Redis(connection_pool=pool), key_prefix=PREFIX, retries=2
    ) as repo:
        cid = uuid.uuid4().hex
        message = UserMessage("kept")
        await repo.save_all(cid, [message])
        # Read and written again once the call has failed: retried like any lost connection.
        _ClosedUnderneath.armed = 1
        assert await repo.find_by_conversation_id(cid) == [message]
        _ClosedUnderneath.armed = 1
        await repo.save_all(cid, [message, UserMessage("also kept")])
        assert len(await repo.find_by_conversation_id(cid)) == 2
        # Lost on every attempt: the caller gets chatmem's error, naming what may have happened.
        _ClosedUnderneath.armed = 1_000
        with pytest.raises(RepositoryOutcomeUnknownError, match="closed while in use"):
            await repo.save_all(cid, [message])
        _ClosedUnderneath.armed = 0
        await pool.disconnect()


async def test_an_attribute_error_outside_redis_py_is_not_taken_for_a_lost_connection(
    redis_url: str,
) -> None:
    async with AsyncRedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX) as repo:

        async def broken() -> None:
            raise AttributeError("'NoneType' object has no attribute 'oops'")

        with pytest.raises(AttributeError, match="oops"):
            await repo._call("testing", broken)


def _server(action: str) -> None:
    subprocess.run(
        ["bash", str(SERVERS / f"{action}.sh")], check=True, capture_output=True, timeout=120
    )


@pytest.fixture
def restart_after(redis_url: str) -> Iterator[None]:
    if not PIDFILE.exists():
        pytest.skip("redis was not started by scripts/servers/redis/start.sh; cannot stop it")
    try:
        yield
    finally:
        _server("start")


def test_server_stopped_mid_run_raises_connection_error_quickly(
    redis_url: str, restart_after: None
) -> None:
    cid = f"fault-{uuid.uuid4()}"
    with RedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, read_timeout=2, connect_timeout=2
    ) as repo:
        stopped = threading.Event()
        stopper = threading.Timer(0.3, lambda: (_server("stop"), stopped.set()))
        stopper.start()
        appended = 0
        began = time.monotonic()

        def append_until_failure() -> None:
            nonlocal appended
            while time.monotonic() - began < 30:
                repo.append(cid, [UserMessage(f"m{appended}")])
                appended += 1

        with pytest.raises(RepositoryConnectionError) as caught:
            append_until_failure()
        failed_at = time.monotonic()
        stopper.join()
        assert stopped.is_set()
        assert appended > 0
        assert failed_at - began < 15  # stop.sh itself takes a moment; no hang
        assert caught.value.backend == "redis"
        assert isinstance(caught.value.__cause__, redis.exceptions.ConnectionError | OSError)
        # Once the server is down, every call fails fast.
        t = time.monotonic()
        with pytest.raises(RepositoryConnectionError):
            repo.find_recent(cid, 5)
        assert time.monotonic() - t < 3
        _server("start")
        # The same repository recovers once the server is back (fresh data).
        assert len(repo.append(cid, [UserMessage("after restart")])) == 1
        repo.delete_by_conversation_id(cid)


async def test_async_server_stopped_raises_connection_error(
    redis_url: str, restart_after: None
) -> None:
    cid = f"afault-{uuid.uuid4()}"
    repo = AsyncRedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, read_timeout=2, connect_timeout=2
    )
    try:
        await repo.append(cid, [UserMessage("before")])
        _server("stop")
        t = time.monotonic()
        with pytest.raises(RepositoryConnectionError):
            await repo.append(cid, [UserMessage("during")])
        assert time.monotonic() - t < 5
        _server("start")
        assert len(await repo.append(cid, [UserMessage("after")])) == 1
        await repo.delete_by_conversation_id(cid)
    finally:
        await repo.aclose()


def test_frozen_server_raises_timeout_not_hang(redis_url: str, repository: Any) -> None:
    pid = int(PIDFILE.read_text()) if PIDFILE.exists() else 0
    comm = Path(f"/proc/{pid}/comm")
    if not pid or not comm.exists() or "redis-server" not in comm.read_text():
        pytest.skip("redis was not started by scripts/servers/redis/start.sh")
    with RedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, read_timeout=0.5, retries=1
    ) as repo:
        repo.find_recent("frozen", 1)  # a pooled connection exists
        os.kill(pid, signal.SIGSTOP)
        try:
            t = time.monotonic()
            with pytest.raises((RepositoryTimeoutError, RepositoryConnectionError)):
                repo.find_recent("frozen", 1)
            elapsed = time.monotonic() - t
        finally:
            os.kill(pid, signal.SIGCONT)
        assert elapsed < 3  # two attempts of 0.5 s plus backoff
        assert repo.find_recent("frozen", 1) == []


# -- construction and options ----------------------------------------------------------------------


def test_from_url_options_and_secrets(redis_url: str) -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'key_prefix'"):
        create_repository(redis_url + "?key_prefx=x")
    with pytest.raises(ConfigurationError, match="key_prefix"):
        create_repository(redis_url, key_prefix="a{b}")
    with pytest.raises(ConfigurationError, match="ttl"):
        create_repository(redis_url, ttl=0)
    secret_url = "redis://someone:s3cr3t-pw@127.0.0.1:1/0?connect_timeout=1"
    repo = create_repository(secret_url)
    try:
        assert isinstance(repo, RedisChatMemoryRepository)
        assert "s3cr3t-pw" not in repr(repo)
        with pytest.raises(RepositoryConnectionError) as caught:
            repo.find_recent("x", 1)
        assert "s3cr3t-pw" not in str(caught.value)
    finally:
        repo.close()


def test_url_options_reach_the_client(redis_url: str) -> None:
    url = redis_url + "?key_prefix=" + PREFIX + "&ttl=90&db=2&read_timeout=3&history_scan_budget=9"
    with create_repository(url) as repo:
        kwargs = repo._client.connection_pool.connection_kwargs
        assert (kwargs["db"], kwargs["socket_timeout"]) == (2, 3.0)
        assert repo._ttl == timedelta(seconds=90)
        assert repo._budget == 9
        stored = repo.append("db2", [UserMessage("in db 2")])
        repo.delete_by_conversation_id("db2")
        assert stored[0].position == 1


async def test_async_repository_from_url_and_existing_client(redis_url: str) -> None:
    repo = create_async_repository(redis_url, key_prefix=PREFIX)
    assert isinstance(repo, AsyncRedisChatMemoryRepository)
    await repo.aclose()
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        async with AsyncRedisChatMemoryRepository(client, key_prefix=PREFIX) as shared:
            stored = await shared.append("shared-client", [UserMessage("x")])
            assert stored[0].position == 1
            await shared.delete_by_conversation_id("shared-client")
        assert await client.ping()  # handed in, so not closed
    finally:
        await client.aclose()


def test_bad_positions_are_configuration_errors(repository: RedisChatMemoryRepository) -> None:
    with pytest.raises(ConfigurationError):
        repository.find_recent("x", 1, before="not-a-position")
    assert issubclass(ConfigurationError, ValueError)
    assert not issubclass(ConfigurationError, RepositoryError)


def test_rediss_url_uses_tls_without_connecting() -> None:
    with create_repository("rediss://user:pw@cache.example:6380/1?ssl_cert_reqs=none") as repo:
        pool = repo._client.connection_pool
        assert pool.connection_class.__name__ == "SSLConnection"
        assert pool.connection_kwargs["db"] == 1
        assert "pw@" not in repr(repo)

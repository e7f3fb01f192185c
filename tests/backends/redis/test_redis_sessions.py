"""Redis-specific behaviour of session logs: the event key's TTL, refused checked appends,
delete_between's index upkeep and a checked append retried after its reply was lost."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from chatmem import (
    AssistantMessage,
    EventMessage,
    Message,
    MessageType,
    SystemMessage,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.exceptions import VersionConflictError
from chatmem_repositories.redis import RedisChatMemoryRepository
from chatmem_repositories.redis._schema import CONVERSATION_KEY_NAMES, KeyLayout

PREFIX = f"chatmem-sessions-{uuid.uuid4().hex[:8]}"
LAYOUT = KeyLayout(PREFIX)
EVENT_KEY = CONVERSATION_KEY_NAMES.index("type:event")


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as client:
        yield client


@pytest.fixture
def expiring(redis_url: str) -> Iterator[RedisChatMemoryRepository]:
    with RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX, ttl=60) as repo:
        yield repo


def _state(raw: redis.Redis, cid: str) -> dict[str, Any]:
    # Every key's content and whether it expires: what a refused append must leave alone.
    state: dict[str, Any] = {}
    for key in LAYOUT.conversation(cid):
        kind = raw.type(key)
        if kind == b"hash":
            state[key] = raw.hgetall(key)
        elif kind == b"zset":
            state[key] = raw.zrange(key, 0, -1, withscores=True)
        else:
            state[key] = kind
    return state


def test_the_event_key_appears_with_the_first_event_and_expires_with_the_conversation(
    expiring: RedisChatMemoryRepository, raw: redis.Redis
) -> None:
    cid = f"events-{uuid.uuid4()}"
    event_key = LAYOUT.conversation(cid)[EVENT_KEY]
    expiring.append(cid, [UserMessage("q"), AssistantMessage("a")])
    assert not raw.exists(event_key)  # a conversation without events has no event key
    expiring.append(cid, [EventMessage("acme.audit", {"n": 1})])
    assert 0 < raw.pttl(event_key) <= 60_000
    # A later append without events refreshes the event key's TTL with every other key's.
    raw.pexpire(event_key, 5_000)
    expiring.append(cid, [UserMessage("again")])
    live = [k for k in LAYOUT.conversation(cid) if raw.exists(k)]
    assert event_key in live
    assert all(5_000 < raw.pttl(k) <= 60_000 for k in live)
    expiring.delete_by_conversation_id(cid)
    assert not raw.exists(event_key)


def test_an_append_without_ttl_keeps_the_conversations_expiry_on_the_event_key(
    redis_url: str, expiring: RedisChatMemoryRepository, raw: redis.Redis
) -> None:
    cid = f"events-kept-ttl-{uuid.uuid4()}"
    with RedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX) as forever:
        expiring.append(cid, [UserMessage("u")])
        forever.append(cid, [EventMessage("acme.audit", {})])  # creates the event key
        try:
            assert 0 < raw.pttl(LAYOUT.conversation(cid)[EVENT_KEY]) <= 60_000
        finally:
            forever.delete_by_conversation_id(cid)


def test_a_refused_append_touches_no_key_and_no_index(
    expiring: RedisChatMemoryRepository, raw: redis.Redis
) -> None:
    cid = f"refused-{uuid.uuid4()}"
    expiring.append(cid, [UserMessage("q"), EventMessage("acme.audit", {})])
    version = expiring.find_version(cid)
    meta = LAYOUT.conversation(cid)[0]
    raw.pexpire(meta, 30_000)  # a refresh of the TTL would show on this key
    before = _state(raw, cid)
    with pytest.raises(VersionConflictError) as raised:
        expiring.append(cid, [AssistantMessage("late")], expected_version=version - 1)
    assert raised.value.actual_version == version
    assert _state(raw, cid) == before
    assert raw.pttl(meta) <= 30_000

    unknown = f"refused-unknown-{uuid.uuid4()}"
    with pytest.raises(VersionConflictError) as raised:
        expiring.append(unknown, [UserMessage("q")], expected_version=3)
    assert raised.value.actual_version == 0
    assert not any(raw.exists(k) for k in LAYOUT.conversation(unknown))
    assert raw.zscore(LAYOUT.conversations, unknown) is None
    expiring.delete_by_conversation_id(cid)


def test_delete_between_keeps_every_index_consistent(
    expiring: RedisChatMemoryRepository, raw: redis.Redis
) -> None:
    cid = f"between-{uuid.uuid4()}"
    written: list[Message] = [
        SystemMessage("rules"),
        UserMessage("first question"),
        AssistantMessage("first answer"),
        EventMessage("acme.note", {"text": "answer noted"}),
        ToolResponseMessage(
            responses=[ToolResponse(id="c1", name="lookup", response_data="answer data")]
        ),
        UserMessage("second question"),
        AssistantMessage("second answer"),
    ]
    stored = expiring.append(cid, written)
    assert expiring.delete_between(cid, stored[1].position, stored[5].position) == 3
    kept = [written[i] for i in (0, 1, 3, 6)]
    assert expiring.find_by_conversation_id(cid) == kept
    assert expiring.count_messages(cid) == 4
    assert [s.message for s in expiring.find_history(cid, text="answer")] == kept[2:]
    assert [s.message for s in expiring.find_history(cid, types=[MessageType.USER])] == [kept[1]]
    assert expiring.find_history(cid, types=[MessageType.TOOL]) == []
    oldest, newest = written[0].created_at, written[-1].created_at + timedelta(seconds=1)
    assert [s.message for s in expiring.find_history(cid, since=oldest, until=newest)] == kept
    system, window = expiring.find_window(cid, 10)
    assert system is not None
    assert system.message == written[0]
    assert [s.message for s in window] == [kept[1], kept[3]]
    latest = expiring.find_latest(cid, MessageType.ASSISTANT)
    assert latest is not None
    assert latest.message == written[6]
    keys = LAYOUT.conversation(cid)
    by_name = dict(zip(CONVERSATION_KEY_NAMES, keys, strict=True))
    sizes = {
        raw.hlen(by_name["msgs"]),
        raw.hlen(by_name["facets"]),
        raw.zcard(by_name["log"]),
        raw.zcard(by_name["time"]),
    }
    assert sizes == {4}
    assert raw.hlen(by_name["ids"]) == 7  # ids stay remembered: a late retry stores nothing
    assert expiring.append(cid, [written[2]]) == []
    # The version is untouched by a delete: it counts appends, not messages.
    assert expiring.find_version(cid) == stored[-1].position
    expiring.delete_by_conversation_id(cid)


class _ReplyLost(redis.Connection):
    """A connection that loses the reply of a command the server has run, once when armed."""

    armed = 0

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        reply = super().read_response(*args, **kwargs)
        if _ReplyLost.armed:
            _ReplyLost.armed -= 1
            self.disconnect()
            raise redis.ConnectionError("the reply was lost")
        return reply


def test_a_checked_append_retried_after_its_reply_was_lost_is_stored_once(
    redis_url: str,
) -> None:
    pool = redis.ConnectionPool.from_url(redis_url, connection_class=_ReplyLost)
    client = redis.Redis(connection_pool=pool, retry=Retry(NoBackoff(), 0))
    try:
        with RedisChatMemoryRepository(client, key_prefix=PREFIX, retries=1) as repo:
            cid = f"lost-reply-{uuid.uuid4()}"
            repo.append(cid, [UserMessage("q")])
            version = repo.find_version(cid)
            answer = AssistantMessage("a")
            _ReplyLost.armed = 1
            stored = repo.append(cid, [answer, answer], expected_version=version)
            assert [(s.position, s.message) for s in stored] == [(version + 1, answer)]
            assert repo.find_version(cid) == version + 1
            assert [m.text for m in repo.find_by_conversation_id(cid)] == ["q", "a"]  # type: ignore[union-attr]
            # A genuine conflict on a retry is still one: the ids were not stored.
            _ReplyLost.armed = 1
            with pytest.raises(VersionConflictError):
                repo.append(cid, [UserMessage("stale")], expected_version=version)
            repo.delete_by_conversation_id(cid)
    finally:
        _ReplyLost.armed = 0
        client.close()


def test_session_calls_are_one_round_trip_each(redis_url: str) -> None:
    commands: list[str] = []

    class Counting(redis.Redis):
        def execute_command(self, *args: Any, **options: Any) -> Any:
            commands.append(str(args[0]))
            return super().execute_command(*args, **options)

    client = Counting.from_url(redis_url)
    try:
        repo = RedisChatMemoryRepository(client, key_prefix=PREFIX)
        cid = f"trips-{uuid.uuid4()}"
        stored = repo.append(cid, [UserMessage("q"), AssistantMessage("a")])  # scripts loaded
        repo.append(cid, [UserMessage("q2")], expected_version=2)
        repo.delete_between(cid, stored[0].position, stored[1].position)
        commands.clear()
        version = repo.find_version(cid)
        repo.append(cid, [EventMessage("acme.audit", {})], expected_version=version)
        repo.delete_between(cid, None, version)
        assert commands == ["HGET", "EVALSHA", "EVALSHA"]
        repo.delete_by_conversation_id(cid)
    finally:
        client.close()

"""Encryption at rest, seen from the store: no content of an encrypted conversation is stored
in clear, on any backend.

A conversation holding a distinctive secret in every place content lives (texts, tool calls
and results, media, metadata, reasoning, provider items, an application event's payload, a
system message and the summary) is written once without encryption and once with it. Then
the store is read below the repository (every row of every table, every key of every type,
every document, every node and relationship) and searched for each secret, its lowercase
(search columns keep folded text) and its base64 (inline media is stored so). Unencrypted,
every secret is found, which shows the search works; encrypted, none is.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from cassandra.cluster import Cluster
from pymongo import MongoClient
from sqlalchemy import MetaData, create_engine, select

from chatmem.encryption import EncryptedLog, StaticKeyProvider, generate_key
from chatmem.exceptions import MessageDecodeError
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Media,
    Message,
    ProviderItem,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
)
from chatmem.repository import OwnedChatMemoryLog, SummaryStore
from chatmem_repositories import create_repository
from tests.support.backends import SQL, backend_url
from tests.support.cleanup import drop_mongodb_collections, drop_redis_keys
from tests.support.servers import server_url

BACKENDS = ("memory", *SQL, "redis", "mongodb", "cassandra", "neo4j")
KEYS = StaticKeyProvider.from_text(f"k1:{generate_key()}")

# Where content lives in a conversation; each place gets a secret of its own.
PLACES = (
    "system-text",
    "user-text",
    "message-metadata",
    "media-inline-data",
    "media-url",
    "assistant-text",
    "tool-call-arguments",
    "reasoning-text",
    "reasoning-signature",
    "provider-item",
    "tool-result",
    "event-payload",
    "summary",
)


def _secrets() -> dict[str, str]:
    """A secret per place, mixed case so that its lowercase is a form of its own."""
    tag = uuid.uuid4().hex[:12].upper()
    return {place: f"Secret{place.title().replace('-', '')}X{tag}" for place in PLACES}


def _conversation(secret: dict[str, str]) -> list[Message]:
    return [
        SystemMessage(secret["system-text"]),
        UserMessage(
            f"hello {secret['user-text']}",
            metadata={"note": secret["message-metadata"]},
            media=[
                Media(
                    mime_type="application/octet-stream",
                    data=secret["media-inline-data"].encode(),
                    name="blob.bin",
                ),
                Media(mime_type="image/png", url=f"https://example.com/{secret['media-url']}.png"),
            ],
        ),
        AssistantMessage(
            f"let me look {secret['assistant-text']}",
            tool_calls=[
                ToolCall(
                    id="call_1",
                    name="lookup",
                    arguments=f'{{"q": "{secret["tool-call-arguments"]}"}}',
                )
            ],
            reasoning=[
                ReasoningPart(
                    text=f"thinking {secret['reasoning-text']}",
                    signature=secret["reasoning-signature"],
                    provider="anthropic",
                )
            ],
            provider_items=[
                ProviderItem(
                    provider="openai",
                    type="reasoning",
                    data={"encrypted_content": secret["provider-item"]},
                )
            ],
        ),
        ToolResponseMessage(
            responses=[
                ToolResponse(id="call_1", name="lookup", response_data=secret["tool-result"])
            ]
        ),
        EventMessage(event_type="acme.note", payload={"note": secret["event-payload"]}),
        AssistantMessage("done"),
    ]


def _forms(secret: str) -> list[str]:
    """The ways a secret may show in stored text: as is, folded, base64."""
    return [secret, secret.lower(), base64.b64encode(secret.encode()).decode("ascii")]


# -- each store, read below the repository ---------------------------------------------------


@dataclass
class Store:
    """A backend in a namespace of this test's own: its URL and options, and a raw dump."""

    url: str
    options: dict[str, Any]
    dump: Callable[[OwnedChatMemoryLog], str]
    """Everything stored in the namespace, as text; given the (inner) repository written to."""


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, dict):
        return "\n".join(f"{_text(k)}={_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set):
        return "\n".join(_text(v) for v in value)
    return str(value)


def _memory(tmp_path: Path) -> Iterator[Store]:
    def dump(repository: OwnedChatMemoryLog) -> str:
        # The in-memory repository keeps message objects: dump their every field.
        held = repository._conversations  # type: ignore[attr-defined]
        summaries = repository._summaries  # type: ignore[attr-defined]
        texts = [
            f"{conversation_id}: {encode_message(stored.message)}\n{stored.message!r}"
            for conversation_id, conversation in held.items()
            for stored in conversation.log
        ]
        texts += [repr(summary) for summary in summaries.values()]
        return "\n".join(texts)

    yield Store("memory://", {}, dump)


def _sql(name: str, tmp_path: Path) -> Iterator[Store]:
    prefix = f"enc{uuid.uuid4().hex[:8]}_"
    raw_url = f"sqlite:///{tmp_path / 'chat.db'}" if name == "sqlite" else server_url(name)
    engine = create_engine(raw_url)

    def tables() -> MetaData:
        metadata = MetaData()
        metadata.reflect(engine, only=lambda table, _: table.startswith(prefix))
        return metadata

    def dump(repository: OwnedChatMemoryLog) -> str:
        found = tables().sorted_tables
        assert {t.name for t in found} >= {f"{prefix}messages", f"{prefix}summaries"}
        with engine.connect() as connection:
            rows = [
                _text(list(row)) for table in found for row in connection.execute(select(table))
            ]
        return "\n".join(rows)

    try:
        yield Store(backend_url(name, tmp_path), {"table_prefix": prefix}, dump)
    finally:
        tables().drop_all(engine)
        engine.dispose()


def _redis(tmp_path: Path) -> Iterator[Store]:
    url = server_url("redis")
    prefix = f"chatmem-enc-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(url)
    readers: dict[bytes, Callable[[bytes], Any]] = {
        b"string": client.get,
        b"hash": client.hgetall,
        b"list": lambda key: client.lrange(key, 0, -1),
        b"set": client.smembers,
        b"zset": lambda key: client.zrange(key, 0, -1, withscores=True),
        b"stream": lambda key: client.xrange(key),
    }

    def dump(repository: OwnedChatMemoryLog) -> str:
        keys = {
            key
            for pattern in (f"{{{prefix}:*", f"{{{prefix}}}:*", f"{prefix}*")
            for key in client.scan_iter(match=pattern, count=1000)
        }
        assert keys, "no key under the prefix"
        texts = []
        for key in sorted(keys):
            kind = client.type(key)
            assert kind in readers, f"{key!r} is a {kind!r}"
            texts.append(f"{_text(key)}: {_text(readers[kind](key))}")
        return "\n".join(texts)

    try:
        yield Store(url, {"key_prefix": prefix}, dump)
    finally:
        drop_redis_keys(url, prefix)
        client.close()


def _mongodb(tmp_path: Path) -> Iterator[Store]:
    url = server_url("mongodb")
    prefix = f"enc{uuid.uuid4().hex[:8]}_"
    client: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=5000)
    database = client.get_default_database()

    def dump(repository: OwnedChatMemoryLog) -> str:
        names = [n for n in database.list_collection_names() if n.startswith(prefix)]
        assert names, "no collection under the prefix"
        return "\n".join(
            f"{name}: {_text(document)}" for name in names for document in database[name].find()
        )

    try:
        yield Store(url, {"collection_prefix": prefix}, dump)
    finally:
        client.close()
        drop_mongodb_collections(url, prefix)


def _cassandra(tmp_path: Path) -> Iterator[Store]:
    url = backend_url("cassandra", tmp_path)
    prefix = f"enc{uuid.uuid4().hex[:8]}_"
    parts = urlsplit(url)
    keyspace = parts.path.strip("/")
    cluster = Cluster([parts.hostname or "127.0.0.1"], port=parts.port or 9042)
    session = cluster.connect()

    def tables() -> list[str]:
        rows = session.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
        )
        return [row.table_name for row in rows if row.table_name.startswith(prefix)]

    def dump(repository: OwnedChatMemoryLog) -> str:
        names = tables()
        assert names, "no table under the prefix"
        return "\n".join(
            f"{name}: {_text(list(row))}"
            for name in names
            for row in session.execute(f'SELECT * FROM "{keyspace}"."{name}"')
        )

    try:
        yield Store(url, {"table_prefix": prefix}, dump)
    finally:
        for name in tables():
            session.execute(f'DROP TABLE IF EXISTS "{keyspace}"."{name}"', timeout=60)
        cluster.shutdown()


def _neo4j(tmp_path: Path) -> Iterator[Store]:
    url = server_url("neo4j")
    prefix = f"Enc{uuid.uuid4().hex[:8]}"
    mine = "any(label IN labels(n) WHERE label STARTS WITH $prefix)"
    drivers: list[Any] = []

    def dump(repository: OwnedChatMemoryLog) -> str:
        driver = repository._driver  # type: ignore[attr-defined]
        drivers.append(driver)
        nodes, _, _ = driver.execute_query(
            f"MATCH (n) WHERE {mine} RETURN labels(n) AS labels, properties(n) AS properties",
            prefix=prefix,
        )
        relationships, _, _ = driver.execute_query(
            f"MATCH (n)-[r]-() WHERE {mine} "
            "RETURN DISTINCT elementId(r) AS id, type(r) AS type, properties(r) AS properties",
            prefix=prefix,
        )
        assert nodes, "no node under the prefix"
        return "\n".join(_text(dict(record)) for record in [*nodes, *relationships])

    try:
        yield Store(url, {"label_prefix": prefix}, dump)
    finally:
        with create_repository(url, label_prefix=prefix) as repository:
            driver = repository._driver  # type: ignore[attr-defined]
            driver.execute_query(f"MATCH (n) WHERE {mine} DETACH DELETE n", prefix=prefix)
            for kind, keyword in (("CONSTRAINTS", "CONSTRAINT"), ("INDEXES", "INDEX")):
                records, _, _ = driver.execute_query(
                    f"SHOW {kind} YIELD name WHERE name STARTS WITH $start RETURN name",
                    start=f"chatmem_{prefix}_",
                )
                for record in records:
                    driver.execute_query(f"DROP {keyword} {record['name']} IF EXISTS")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    name = request.param
    if name == "memory":
        yield from _memory(tmp_path)
    elif name in SQL:
        yield from _sql(name, tmp_path)
    else:
        yield from {
            "redis": _redis,
            "mongodb": _mongodb,
            "cassandra": _cassandra,
            "neo4j": _neo4j,
        }[name](tmp_path)


# -- the tests -------------------------------------------------------------------------------


def _write(
    repository: OwnedChatMemoryLog, conversation_id: str, secret: dict[str, str]
) -> list[Message]:
    written = _conversation(secret)
    stored = repository.append(conversation_id, written)
    assert isinstance(repository, SummaryStore)
    assert repository.save_summary(
        conversation_id, secret["summary"], stored[-1].position, expected_version=0
    )
    return written


def _leaks(dump: str, secret: dict[str, str]) -> dict[str, list[str]]:
    """Each place whose secret shows in the dump, with the forms it shows in."""
    found = {place: [f for f in _forms(value) if f in dump] for place, value in secret.items()}
    return {place: forms for place, forms in found.items() if forms}


def test_no_secret_is_stored_in_clear(store: Store) -> None:
    plain_secret, sealed_secret = _secrets(), _secrets()
    plain_id, sealed_id = f"plain-{uuid.uuid4()}", f"sealed-{uuid.uuid4()}"
    with create_repository(store.url, **store.options) as plain:
        _write(plain, plain_id, plain_secret)
        # Unencrypted, every secret is in the store: the search below can find one.
        assert set(_leaks(store.dump(plain), plain_secret)) == set(PLACES)
    with create_repository(store.url, encryption=KEYS, **store.options) as log:
        assert isinstance(log, EncryptedLog)
        written = _write(log, sealed_id, sealed_secret)
        dump = store.dump(log.repository)
        assert _leaks(dump, sealed_secret) == {}
        assert sealed_id in dump  # the dump does hold the encrypted conversation
        # What is read back is what was written, to the byte.
        read = log.find_by_conversation_id(sealed_id)
        assert [encode_message(m) for m in read] == [encode_message(m) for m in written]
        summary = log.find_summary(sealed_id)
        assert summary is not None
        assert summary.text == sealed_secret["summary"]


def test_a_sealed_record_opens_only_where_it_was_written(store: Store) -> None:
    source, target = f"source-{uuid.uuid4()}", f"target-{uuid.uuid4()}"
    with create_repository(store.url, encryption=KEYS, **store.options) as log:
        assert isinstance(log, EncryptedLog)
        inner = log.repository
        log.append(source, [UserMessage("the source's own words")])
        log.append(target, [UserMessage("the target's own words")])
        data_key, record = inner.find_by_conversation_id(source)
        assert isinstance(data_key, EventMessage)
        assert isinstance(record, UserMessage)

        # Copied into another conversation, same message id: its data key is not there.
        inner.append(target, [decode_message(encode_message(record))])
        with pytest.raises(MessageDecodeError):
            log.find_by_conversation_id(target)
        # Nor does it open when its data key is copied with it: the ciphertext is bound to
        # the conversation it was written in.
        inner.append(target, [decode_message(encode_message(data_key))])
        with pytest.raises(MessageDecodeError):
            log.find_by_conversation_id(target)
        # Within its own conversation, under another message's id, it does not open either.
        inner.append(source, [record.model_copy(update={"id": f"moved-{uuid.uuid4()}"})])
        with pytest.raises(MessageDecodeError):
            log.find_by_conversation_id(source)
        for conversation_id in (source, target):
            log.delete_by_conversation_id(conversation_id)

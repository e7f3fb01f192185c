"""Importing conversations that Spring AI's chat memory repositories wrote, on Java.

The writers are ``spring_ai/SpringAi*Writer.java`` beside this file, run on Spring AI's own
repository classes from Maven Central (resolved once per kind into
``.ci-cache/spring-ai-<kind>``) against the test servers: ``JdbcChatMemoryRepository`` 1.0.1
on PostgreSQL; the Cassandra, MongoDB (FerretDB) and Neo4j repositories 1.1.2, the first
Spring AI release that Maven Central serves all three in (it serves none of them at 1.0.1,
and no MongoDB one before 1.1.0). One JVM run per test writes two conversations.
"""

from __future__ import annotations

import fcntl
import inspect
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import sqlalchemy

from chatmem import InMemoryChatMemoryRepository
from chatmem.messages import (
    AssistantMessage,
    Media,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem_cli.importers.sources import read_source
from chatmem_cli.importers.spring_ai import (
    ImportedConversation,
    SourceError,
    import_conversations,
    spring_ai_cassandra_conversations,
    spring_ai_jdbc_conversations,
    spring_ai_mongodb_conversations,
    spring_ai_neo4j_conversations,
)
from tests.support.servers import server_url

ROOT = Path(__file__).resolve().parents[2]
WRITERS = Path(__file__).resolve().parent / "spring_ai"
# The Spring AI release whose repository wrote each kind's test data.
VERSIONS = {"jdbc": "1.0.1", "cassandra": "1.1.2", "mongodb": "1.1.2", "neo4j": "1.1.2"}
# Beyond the repository itself: the JDBC repository needs a driver of the application's choice.
EXTRA_DEPENDENCIES = {
    "jdbc": "<dependency><groupId>org.postgresql</groupId><artifactId>postgresql</artifactId>"
    "<version>42.7.4</version></dependency>"
}
# A short-lived JVM: the client compiler alone and the serial collector halve its CPU time.
JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
CASSANDRA_PREFIX = "chatmem_"  # before Spring AI's default keyspace, in the writer
CASSANDRA_KEYSPACE = (
    CASSANDRA_PREFIX
    + inspect.signature(spring_ai_cassandra_conversations).parameters["keyspace"].default
)
MONGODB_DATABASE = "chatmem_spring_ai"
NEO4J_PREFIX = "ChatmemSpring"  # before each of Spring AI's default labels
# The reader's default labels, each after the prefix; the writer puts the prefix before Spring
# AI's own default labels, so a default that differs from Spring AI's fails the test.
NEO4J_LABELS = {
    name: NEO4J_PREFIX + parameter.default
    for name, parameter in inspect.signature(spring_ai_neo4j_conversations).parameters.items()
    if name.endswith("_label")
}
UNICODE = (
    "\u00dcn\u00efc\u00f8d\u00e9 \u2614 \u65e5\u672c\u8a9e \U0001f327"  # as the writers spell it
)


def _missing(tool: str) -> None:
    message = f"{tool} is not installed; the Spring AI importer tests run Spring AI on Java"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def _classpath(kind: str) -> str:
    """Resolve the Spring AI repository of ``kind`` once and return its classpath."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            _missing(tool)
    version = VERSIONS[kind]
    artifact = f"spring-ai-model-chat-memory-repository-{kind}"
    cache = ROOT / ".ci-cache" / f"spring-ai-{kind}"
    lib = cache / "lib"
    cache.mkdir(parents=True, exist_ok=True)
    # The test command's two pytest processes may resolve two kinds at once, into one local
    # Maven repository that Maven does not lock: one resolution at a time.
    with (cache.parent / "spring-ai.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (lib / f"{artifact}-{version}.jar").exists():
            _resolve(cache, kind, artifact, version, lib)
    return str(lib / "*")


def _resolve(cache: Path, kind: str, artifact: str, version: str, lib: Path) -> None:
    """Copy the Spring AI repository of ``kind`` and its dependencies into ``lib`` with Maven."""
    (cache / "pom.xml").write_text(
        f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>chatmem.tests</groupId><artifactId>spring-ai-{kind}</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.springframework.ai</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>
    {EXTRA_DEPENDENCIES.get(kind, "")}
  </dependencies>
</project>
"""
    )
    subprocess.run(
        ["mvn", "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
        cwd=cache,
        check=True,
        timeout=600,
    )


def _write(kind: str, writer: str, *args: str) -> None:
    """Run one Spring AI writer on Java; its output is shown if it fails."""
    done = subprocess.run(
        ["java", *JVM_FLAGS, "-cp", _classpath(kind), str(WRITERS / writer), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{writer} failed:\n{done.stdout}\n{done.stderr}"


def _ids() -> list[str]:
    return [f"spring-{uuid.uuid4().hex[:8]}", f"spring-{uuid.uuid4().hex[:8]}"]


def test_spring_ai_jdbc_table() -> None:
    url = server_url("postgresql")
    parts = urlsplit(url)
    jdbc = f"jdbc:postgresql://{parts.hostname}:{parts.port}{parts.path}"
    conversations = _ids()
    _write(
        "jdbc",
        "SpringAiJdbcWriter.java",
        jdbc,
        parts.username or "",
        parts.password or "",
        *conversations,
    )
    try:
        read = [c for c in spring_ai_jdbc_conversations(url) if c.conversation_id in conversations]
        repository = InMemoryChatMemoryRepository()
        report = import_conversations(read, repository)
        # Five messages each; Spring AI's table kept the tool call and its result without
        # their ids, so two of the five are left out and said so.
        assert (report.conversations, report.messages_stored, report.left_out) == (2, 6, 4)
        for conversation in conversations:
            stored = repository.find_by_conversation_id(conversation)
            assert [(m.type.value, m.text) for m in stored] == [  # type: ignore[union-attr]
                ("system", "Be brief."),
                ("user", f"Weather in Oslo, {conversation}?"),
                ("assistant", "Sunny."),
            ]
            assert stored[0].created_at < stored[2].created_at
        assert import_conversations(read, repository).messages_stored == 0  # nothing twice
    finally:
        engine = sqlalchemy.create_engine(url)
        with engine.begin() as connection:
            connection.execute(
                sqlalchemy.text(
                    "DELETE FROM spring_ai_chat_memory WHERE conversation_id IN :ids"
                ).bindparams(sqlalchemy.bindparam("ids", expanding=True)),
                {"ids": conversations},
            )
        engine.dispose()


def test_spring_ai_jdbc_missing_table_is_a_source_error(tmp_path: Path) -> None:
    # Neither the name nor its lower-case form is there: a SourceError naming both, as the
    # other readers do, not SQLAlchemy's NoSuchTableError.
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    sqlalchemy.create_engine(url).dispose()
    with pytest.raises(SourceError, match="spring-ai-jdbc: no table 'SPRING_AI_CHAT_MEMORY'"):
        list(spring_ai_jdbc_conversations(url))
    with pytest.raises(SourceError, match=r"no table 'absent' *$"):
        list(read_source("spring-ai-jdbc", server_url("postgresql"), table="absent"))


# --- Cassandra -------------------------------------------------------------------------


@pytest.fixture
def cassandra_session() -> Iterator[tuple[str, int, Any]]:
    from cassandra.cluster import Cluster

    parts = urlsplit(server_url("cassandra"))
    host, port = parts.hostname or "127.0.0.1", parts.port or 9042
    cluster = Cluster([host], port=port)
    try:
        yield host, port, cluster.connect()
    finally:
        cluster.shutdown()


def _text_of(stored: Sequence[Message]) -> list[tuple[str, str]]:
    return [(m.type.value, getattr(m, "text", "")) for m in stored]


def test_spring_ai_cassandra_table(cassandra_session: tuple[str, int, Any]) -> None:
    host, port, session = cassandra_session
    datacenter = session.execute("SELECT data_center FROM system.local").one()[0]
    conversations = _ids()
    _write(
        "cassandra",
        "SpringAiCassandraWriter.java",
        host,
        str(port),
        datacenter,
        CASSANDRA_PREFIX,
        *conversations,
    )
    url = f"cassandra://{host}:{port}"
    table = f"{CASSANDRA_KEYSPACE}.ai_chat_memory"
    try:

        def read(direct: bool = False) -> list[ImportedConversation]:
            # The reader, or the Python API under `chatmem migrate --from spring-ai-cassandra`.
            found = (
                spring_ai_cassandra_conversations(url, keyspace=CASSANDRA_KEYSPACE)
                if direct
                else read_source(
                    "spring-ai-cassandra", url, keyspace=CASSANDRA_KEYSPACE, table="ai_chat_memory"
                )
            )
            return sorted(
                (c for c in found if c.conversation_id in conversations),
                key=lambda c: conversations.index(c.conversation_id),
            )

        repository = InMemoryChatMemoryRepository()
        report = import_conversations(read(), repository, verify=True)
        assert report.mismatches == ()
        # Two saves per conversation (two rows); the newer one is the conversation. Its tool
        # call and result kept no text and no ids: left out and counted.
        assert (report.conversations, report.messages_stored, report.left_out) == (2, 6, 4)
        for conversation in conversations:
            stored = repository.find_by_conversation_id(conversation)
            assert _text_of(stored) == [
                ("system", "Be brief."),
                ("user", f"Weather in Oslo, {conversation}? {UNICODE}"),
                ("assistant", "Sunny. \u2600"),
            ]
            # Each message keeps the time of the save that first held it (milliseconds).
            assert stored[0].created_at == stored[1].created_at < stored[2].created_at
            assert stored[2].created_at.microsecond % 1000 == 0
        assert (
            import_conversations(read(direct=True), repository).messages_stored == 0
        )  # nothing twice

        # Spring AI saves again after one more turn, its window having dropped the oldest
        # message: the new row keeps the other messages' times, so only the new one is stored.
        first = conversations[0]
        latest = session.execute(
            f"SELECT message_timestamp, messages FROM {table} WHERE session_id = %s LIMIT 1",
            [first],
        ).one()
        kept = list(latest.messages)[1:]
        saved_at = latest.message_timestamp + timedelta(seconds=1)
        udt = "{msg_timestamp: %s, msg_type: %s, msg_content: %s}"
        values = [v for m in kept for v in (m.msg_timestamp, m.msg_type, m.msg_content)]
        session.execute(
            f"INSERT INTO {table} (session_id, message_timestamp, messages) VALUES (%s, %s, ["
            + ", ".join([udt] * (len(kept) + 1))
            + "])",
            [first, saved_at, *values, saved_at, "USER", "And tomorrow?"],
        )
        again = import_conversations(read(), repository)
        assert (again.messages_stored, again.conversations_skipped) == (1, 1)
        assert _text_of(repository.find_by_conversation_id(first))[-2:] == [
            ("assistant", "Sunny. \u2600"),
            ("user", "And tomorrow?"),
        ]
    finally:
        session.execute(f"DELETE FROM {table} WHERE session_id IN (%s, %s)", conversations)


def test_spring_ai_cassandra_refuses_what_it_cannot_read(
    cassandra_session: tuple[str, int, Any],
) -> None:
    host, port, _ = cassandra_session
    with pytest.raises(SourceError, match="no such table"):
        list(spring_ai_cassandra_conversations(f"cassandra://{host}:{port}", "system", "nope"))
    with pytest.raises(SourceError, match="names keyspace 'app'"):
        list(spring_ai_cassandra_conversations(f"cassandra://{host}:{port}/app"))
    with pytest.raises(SourceError, match="not a cassandra:// URL"):
        list(spring_ai_cassandra_conversations(f"redis://{host}:{port}"))
    with pytest.raises(SourceError, match="not a CQL name"):
        list(spring_ai_cassandra_conversations(f"cassandra://{host}", table_name="a-b"))


# --- MongoDB ---------------------------------------------------------------------------


def _mongodb_url() -> str:
    return urlunsplit(urlsplit(server_url("mongodb"))._replace(path=f"/{MONGODB_DATABASE}"))


def test_spring_ai_mongodb_collection() -> None:
    import pymongo

    url = _mongodb_url()
    conversations = _ids()
    _write("mongodb", "SpringAiMongoWriter.java", url, MONGODB_DATABASE, *conversations)
    client: pymongo.MongoClient = pymongo.MongoClient(url)  # type: ignore[type-arg]
    try:

        def read(direct: bool = False) -> list[ImportedConversation]:
            found = (
                spring_ai_mongodb_conversations(url)
                if direct
                else read_source("spring-ai-mongodb", url, collection="ai_chat_memory")
            )
            return [c for c in found if c.conversation_id in conversations]

        repository = InMemoryChatMemoryRepository()
        report = import_conversations(read(), repository, verify=True)
        assert report.mismatches == ()
        # One document per message; the tool call and its result kept no text and no ids.
        assert (report.conversations, report.messages_stored, report.left_out) == (2, 6, 4)
        for conversation in conversations:
            stored = repository.find_by_conversation_id(conversation)
            assert _text_of(stored) == [
                ("system", "Be brief."),
                ("user", f"Weather in Oslo, {conversation}? {UNICODE}"),
                ("assistant", "Sunny. \u2600"),
            ]
            # Metadata comes along, without Spring AI's own messageType entry.
            assert [m.metadata for m in stored] == [{}, {"channel": "web", "attempt": 2}, {}]
        assert (
            import_conversations(read(direct=True), repository).messages_stored == 0
        )  # nothing twice
    finally:
        client[MONGODB_DATABASE]["ai_chat_memory"].delete_many(
            {"conversationId": {"$in": conversations}}
        )
        client.close()


def test_spring_ai_mongodb_refuses_what_it_cannot_read() -> None:
    url = _mongodb_url()
    with pytest.raises(SourceError, match="no collection 'nope'"):
        list(spring_ai_mongodb_conversations(url, collection_name="nope"))
    with pytest.raises(SourceError, match="names no database"):
        list(spring_ai_mongodb_conversations(urlunsplit(urlsplit(url)._replace(path=""))))
    # Read as the mongodb repository reads its URL: its options that mean nothing to a
    # source, and names neither it nor pymongo takes, are refused before connecting.
    with pytest.raises(SourceError, match=r"spring-ai-mongodb: the URL option\(s\) ttl apply"):
        list(spring_ai_mongodb_conversations("mongodb://127.0.0.1:1/db?ttl=60"))
    with pytest.raises(SourceError, match="unknown option 'replicaset_name'"):
        list(spring_ai_mongodb_conversations("mongodb://127.0.0.1:1/db?replicaset_name=x"))


# --- Neo4j -----------------------------------------------------------------------------


def test_spring_ai_neo4j_graph() -> None:
    import neo4j

    url = server_url("neo4j")
    parts = urlsplit(url)
    conversations = _ids()
    _write(
        "neo4j",
        "SpringAiNeo4jWriter.java",
        urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])),
        parts.username or "",
        parts.password or "",
        NEO4J_PREFIX,
        *conversations,
    )
    try:

        def read(direct: bool = False) -> list[ImportedConversation]:
            found = (
                spring_ai_neo4j_conversations(url, **NEO4J_LABELS)
                if direct
                else read_source("spring-ai-neo4j", url, **NEO4J_LABELS)
            )
            return [c for c in found if c.conversation_id in conversations]

        repository = InMemoryChatMemoryRepository()
        report = import_conversations(read(), repository, verify=True)
        assert report.mismatches == ()
        # The graph keeps tool calls, their results, media and metadata: nothing left out.
        assert (report.conversations, report.messages_stored, report.left_out) == (2, 10, 0)
        for conversation in conversations:
            system, user, call, result, answer = repository.find_by_conversation_id(conversation)
            assert _text_of([system]) == [("system", "Be brief.")]
            assert isinstance(user, UserMessage)
            assert user.text == f"Weather in Oslo, {conversation}? {UNICODE}"
            assert user.metadata == {"channel": "web", "attempt": 2}
            assert user.media == [
                Media(mime_type="image/png", data=b"\x89PNG\x00\xff", name="dot.png"),
                Media(mime_type="image/jpeg", url="https://example.com/oslo.jpg", name="oslo.jpg"),
            ]
            assert isinstance(call, AssistantMessage)
            assert (call.text, call.tool_calls) == (
                "",
                [
                    ToolCall(id="c1", name="weather", arguments='{"city":"Oslo"}'),
                    ToolCall(id="c2", name="time", arguments="{}"),
                ],
            )
            assert isinstance(result, ToolResponseMessage)
            assert result.responses == [
                ToolResponse(id="c1", name="weather", response_data="sunny"),
                ToolResponse(id="c2", name="time", response_data="12:00"),
            ]
            assert isinstance(answer, AssistantMessage)
            assert (answer.text, answer.metadata) == (
                "Sunny at noon. \u2600",
                {"finishReason": "STOP"},
            )
        again = import_conversations(read(direct=True), repository)
        assert (again.messages_stored, again.conversations_skipped) == (0, 2)  # nothing twice
    finally:
        auth = (parts.username, parts.password or "") if parts.username else None
        with neo4j.GraphDatabase.driver(
            urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])), auth=auth
        ) as driver:
            driver.execute_query(
                f"MATCH (s:{NEO4J_LABELS['session_label']}) WHERE s.id IN $ids "
                "OPTIONAL MATCH (s)-[:HAS_MESSAGE]->(m) OPTIONAL MATCH (m)-->(x) "
                "DETACH DELETE s, m, x",
                ids=conversations,
            )


def test_a_server_url_listing_an_ipv6_host_is_left_to_its_driver() -> None:
    # Only SQLite URLs are checked for a file before reading; a host list with a bracketed
    # IPv6 host (which urlsplit refuses on Pythons with the bracketed-host fix) gets past
    # the check, and nothing is read before the first conversation is asked for.
    read_source("spring-ai-mongodb", "mongodb://127.0.0.1:1,[::1]:2/db")


def test_spring_ai_neo4j_refuses_what_it_cannot_read() -> None:
    with pytest.raises(SourceError, match=r"malformed URL 'bolt://\[::1'"):
        list(spring_ai_neo4j_conversations("bolt://[::1"))
    with pytest.raises(SourceError, match="not a bolt:// or neo4j:// URL"):
        list(spring_ai_neo4j_conversations("http://127.0.0.1:7687"))
    with pytest.raises(SourceError, match="names database 'a' but database is 'b'"):
        list(spring_ai_neo4j_conversations("bolt://127.0.0.1:7687/a", database="b"))
    with pytest.raises(SourceError, match="must not be empty"):
        list(spring_ai_neo4j_conversations(server_url("neo4j"), session_label=""))

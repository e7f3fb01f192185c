"""The floor of a turn per backend: the same driver as chatmem, and no chatmem.

A floor turn is the least a chat turn needs from the database: one indexed read of the newest
20 messages of one conversation, and one round trip inserting two (the user's and the
assistant's). Each class creates its own table, collection, key space or label (named
``floor_<run>``), fills a conversation, runs turns and drops what it created. The position of
the next message is kept by the benchmark, so the floor pays for no counter.

``floor_for(url, is_async)`` picks the class from the URL scheme.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from typing import Any
from urllib.parse import unquote, urlsplit

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
READ = 20
FILL_BATCH = 1000


def rows_for(start: int, count: int) -> list[tuple[int, str, str]]:
    """Rows ``(position, role, content)`` with 200-character contents."""
    return [
        (p, "user" if p % 2 == 0 else "assistant", f"{p:06d} {TEXT}"[:200])
        for p in range(start, start + count)
    ]


def _name() -> str:
    return f"floor_{uuid.uuid4().hex[:8]}"


class _Positions:
    """The next position per conversation, kept client-side."""

    def __init__(self) -> None:
        self.next: dict[str, int] = {}

    def take(self, cid: str, count: int) -> list[tuple[int, str, str]]:
        start = self.next.get(cid, 0)
        self.next[cid] = start + count
        return rows_for(start, count)


# --- in-process ------------------------------------------------------------------------------


class MemoryFloor(_Positions):
    """A dict of lists: slice the newest 20, extend by two."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.store: dict[str, list[tuple[int, str, str]]] = {}

    def fill(self, cid: str, n: int) -> None:
        self.store.setdefault(cid, []).extend(self.take(cid, n))

    def turn(self, cid: str) -> None:
        self.store[cid][-READ:]
        self.store[cid].extend(self.take(cid, 2))

    def close(self) -> None:
        self.store.clear()


class AsyncMemoryFloor(MemoryFloor):
    async def fill(self, cid: str, n: int) -> None:  # type: ignore[override]
        MemoryFloor.fill(self, cid, n)

    async def turn(self, cid: str) -> None:  # type: ignore[override]
        MemoryFloor.turn(self, cid)

    async def close(self) -> None:  # type: ignore[override]
        MemoryFloor.close(self)


# --- SQL -------------------------------------------------------------------------------------


def _sql_parts(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "dbname": parts.path.lstrip("/"),
    }


def _sql_statements(table: str, mark: str, key_type: str) -> dict[str, str]:
    values = f"({mark}, {mark}, {mark}, {mark})"
    return {
        "create": (
            f"CREATE TABLE {table} (conversation_id {key_type} NOT NULL, position BIGINT NOT NULL,"
            " role VARCHAR(16) NOT NULL, content TEXT NOT NULL,"
            " PRIMARY KEY (conversation_id, position))"
        ),
        "read": (
            f"SELECT position, role, content FROM {table} WHERE conversation_id = {mark}"
            f" ORDER BY position DESC LIMIT {READ}"
        ),
        "insert2": f"INSERT INTO {table} VALUES {values}, {values}",
        "insert1": f"INSERT INTO {table} VALUES {values}",
        "drop": f"DROP TABLE {table}",
        "analyze": f"ANALYZE {table}",
    }


# The floor's table holds only what a run puts in it. Filled with 10 rows and analyzed, its
# prepared read gets a generic plan that scans the table and sorts it, and every turn adds two
# rows: the read averaged 0.8 ms over the first 1,000 turns and 2.9 ms over the third, where
# the index read it stands for takes 0.2 ms at any length. A real table (chatmem's included)
# is read through the index, so the floor is too.
NO_SEQUENTIAL_SCAN = "SET enable_seqscan = off"


class PostgresFloor(_Positions):
    """psycopg 3, autocommit, server-side prepared statements."""

    def __init__(self, url: str) -> None:
        import psycopg

        super().__init__()
        p = _sql_parts(url)
        self.conn = psycopg.connect(**{**p, "port": p["port"] or 5432}, autocommit=True)
        self.sql = _sql_statements(_name(), "%s", "VARCHAR(255)")
        self.conn.execute(self.sql["create"])
        self.conn.execute(NO_SEQUENTIAL_SCAN)

    def fill(self, cid: str, n: int) -> None:
        rows = [(cid, *r) for r in self.take(cid, n)]
        with self.conn.cursor() as cur:
            cur.executemany(self.sql["insert1"], rows)
        # Statistics for the new table, as autovacuum would soon give it: without them the
        # prepared read's generic plan may scan the table and sort the conversation.
        self.conn.execute(self.sql["analyze"])

    def turn(self, cid: str) -> None:
        a, b = self.take(cid, 2)
        self.conn.execute(self.sql["read"], (cid,), prepare=True).fetchall()
        self.conn.execute(self.sql["insert2"], (cid, *a, cid, *b), prepare=True)

    def close(self) -> None:
        self.conn.execute(self.sql["drop"])
        self.conn.close()


class AsyncPostgresFloor(_Positions):
    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.sql = _sql_statements(_name(), "%s", "VARCHAR(255)")
        self.conn: Any = None

    async def _connect(self) -> Any:
        import psycopg

        if self.conn is None:
            p = _sql_parts(self.url)
            self.conn = await psycopg.AsyncConnection.connect(
                **{**p, "port": p["port"] or 5432}, autocommit=True
            )
            await self.conn.execute(self.sql["create"])
            await self.conn.execute(NO_SEQUENTIAL_SCAN)  # as in PostgresFloor
        return self.conn

    async def fill(self, cid: str, n: int) -> None:
        conn = await self._connect()
        async with conn.cursor() as cur:
            await cur.executemany(self.sql["insert1"], [(cid, *r) for r in self.take(cid, n)])
        await conn.execute(self.sql["analyze"])  # as in PostgresFloor.fill

    async def turn(self, cid: str) -> None:
        a, b = self.take(cid, 2)
        cur = await self.conn.execute(self.sql["read"], (cid,), prepare=True)
        await cur.fetchall()
        await self.conn.execute(self.sql["insert2"], (cid, *a, cid, *b), prepare=True)

    async def close(self) -> None:
        await self.conn.execute(self.sql["drop"])
        await self.conn.close()


def _mysql_kwargs(url: str) -> dict[str, Any]:
    p = _sql_parts(url)
    return {
        "host": p["host"],
        "port": p["port"] or 3306,
        "user": p["user"],
        "password": p["password"],
        "db": p["dbname"],
        "charset": "utf8mb4",
        "autocommit": True,
    }


class MariaDbFloor(_Positions):
    """pymysql (chatmem's sync driver), autocommit; pymysql has no server-side prepare."""

    def __init__(self, url: str) -> None:
        import pymysql

        super().__init__()
        self.conn = pymysql.connect(**_mysql_kwargs(url))
        self.sql = _sql_statements(_name(), "%s", "VARCHAR(255)")
        with self.conn.cursor() as cur:
            cur.execute(self.sql["create"])

    def fill(self, cid: str, n: int) -> None:
        rows = [(cid, *r) for r in self.take(cid, n)]
        with self.conn.cursor() as cur:
            for start in range(0, n, FILL_BATCH):  # pymysql rewrites this into multi-row INSERTs
                cur.executemany(self.sql["insert1"], rows[start : start + FILL_BATCH])

    def turn(self, cid: str) -> None:
        a, b = self.take(cid, 2)
        with self.conn.cursor() as cur:
            cur.execute(self.sql["read"], (cid,))
            cur.fetchall()
            cur.execute(self.sql["insert2"], (cid, *a, cid, *b))

    def close(self) -> None:
        with self.conn.cursor() as cur:
            cur.execute(self.sql["drop"])
        self.conn.close()


class AsyncMariaDbFloor(_Positions):
    """aiomysql (chatmem's async driver), autocommit."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.sql = _sql_statements(_name(), "%s", "VARCHAR(255)")
        self.conn: Any = None

    async def fill(self, cid: str, n: int) -> None:
        import aiomysql

        if self.conn is None:
            self.conn = await aiomysql.connect(**_mysql_kwargs(self.url))
            async with self.conn.cursor() as cur:
                await cur.execute(self.sql["create"])
        rows = [(cid, *r) for r in self.take(cid, n)]
        async with self.conn.cursor() as cur:
            for start in range(0, n, FILL_BATCH):
                await cur.executemany(self.sql["insert1"], rows[start : start + FILL_BATCH])

    async def turn(self, cid: str) -> None:
        a, b = self.take(cid, 2)
        async with self.conn.cursor() as cur:
            await cur.execute(self.sql["read"], (cid,))
            await cur.fetchall()
            await cur.execute(self.sql["insert2"], (cid, *a, cid, *b))

    async def close(self) -> None:
        async with self.conn.cursor() as cur:
            await cur.execute(self.sql["drop"])
        self.conn.close()


def _sqlite_path(url: str) -> str:
    path = url.split("://", 1)[1].split("?", 1)[0]
    return path[1:] if path.startswith("/") else path  # sqlite:///rel.db, sqlite:////abs.db


class SqliteFloor(_Positions):
    """sqlite3 with chatmem's pragmas (WAL, synchronous=NORMAL), autocommit statements."""

    def __init__(self, url: str) -> None:
        super().__init__()
        path = _sqlite_path(url)
        self.conn = sqlite3.connect(path or ":memory:", isolation_level=None, timeout=30.0)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.sql = _sql_statements(_name(), "?", "VARCHAR(255)")
        self.conn.execute(self.sql["create"])

    def fill(self, cid: str, n: int) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany(self.sql["insert1"], [(cid, *r) for r in self.take(cid, n)])
        self.conn.execute("COMMIT")

    def turn(self, cid: str) -> None:
        a, b = self.take(cid, 2)
        self.conn.execute(self.sql["read"], (cid,)).fetchall()
        self.conn.execute(self.sql["insert2"], (cid, *a, cid, *b))

    def close(self) -> None:
        self.conn.execute(self.sql["drop"])
        self.conn.close()


class AsyncSqliteFloor(_Positions):
    """aiosqlite (chatmem's async driver), same pragmas."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.path = _sqlite_path(url) or ":memory:"
        self.sql = _sql_statements(_name(), "?", "VARCHAR(255)")
        self.conn: Any = None

    async def fill(self, cid: str, n: int) -> None:
        import aiosqlite

        if self.conn is None:
            self.conn = await aiosqlite.connect(self.path, isolation_level=None, timeout=30.0)
            await self.conn.execute("PRAGMA journal_mode=WAL")
            await self.conn.execute("PRAGMA synchronous=NORMAL")
            await self.conn.execute(self.sql["create"])
        await self.conn.execute("BEGIN")
        await self.conn.executemany(self.sql["insert1"], [(cid, *r) for r in self.take(cid, n)])
        await self.conn.execute("COMMIT")

    async def turn(self, cid: str) -> None:
        a, b = self.take(cid, 2)
        async with self.conn.execute(self.sql["read"], (cid,)) as cur:
            await cur.fetchall()
        await self.conn.execute(self.sql["insert2"], (cid, *a, cid, *b))

    async def close(self) -> None:
        await self.conn.execute(self.sql["drop"])
        await self.conn.close()


# --- Redis -----------------------------------------------------------------------------------


def _encode(row: tuple[int, str, str]) -> str:
    return json.dumps({"p": row[0], "role": row[1], "content": row[2]})


class RedisFloor(_Positions):
    """One list per conversation: LRANGE of the newest 20, one RPUSH of two (JSON values)."""

    def __init__(self, url: str) -> None:
        import redis

        super().__init__()
        self.client = redis.Redis.from_url(url)
        self.prefix = _name()

    def fill(self, cid: str, n: int) -> None:
        rows = self.take(cid, n)
        for start in range(0, n, FILL_BATCH):
            self.client.rpush(
                f"{self.prefix}:{cid}", *map(_encode, rows[start : start + FILL_BATCH])
            )

    def turn(self, cid: str) -> None:
        key = f"{self.prefix}:{cid}"
        [json.loads(v) for v in self.client.lrange(key, -READ, -1)]
        self.client.rpush(key, *map(_encode, self.take(cid, 2)))

    def close(self) -> None:
        keys = list(self.client.scan_iter(f"{self.prefix}:*"))
        if keys:
            self.client.delete(*keys)
        self.client.close()


class AsyncRedisFloor(_Positions):
    def __init__(self, url: str) -> None:
        import redis.asyncio

        super().__init__()
        self.client = redis.asyncio.Redis.from_url(url)
        self.prefix = _name()

    async def fill(self, cid: str, n: int) -> None:
        rows = self.take(cid, n)
        for start in range(0, n, FILL_BATCH):
            await self.client.rpush(
                f"{self.prefix}:{cid}", *map(_encode, rows[start : start + FILL_BATCH])
            )

    async def turn(self, cid: str) -> None:
        key = f"{self.prefix}:{cid}"
        [json.loads(v) for v in await self.client.lrange(key, -READ, -1)]
        await self.client.rpush(key, *map(_encode, self.take(cid, 2)))

    async def close(self) -> None:
        keys = [k async for k in self.client.scan_iter(f"{self.prefix}:*")]
        if keys:
            await self.client.delete(*keys)
        await self.client.aclose()


# --- MongoDB ---------------------------------------------------------------------------------


def _documents(cid: str, rows: list[tuple[int, str, str]]) -> list[dict[str, Any]]:
    return [{"conversation_id": cid, "position": p, "role": r, "content": c} for p, r, c in rows]


def _mongo_database(url: str) -> str:
    return urlsplit(url).path.lstrip("/") or "chatmem"


class MongoFloor(_Positions):
    """find(sort position desc, limit 20) on a (conversation_id, position) index + insert_many."""

    def __init__(self, url: str) -> None:
        from pymongo import MongoClient

        super().__init__()
        self.client: Any = MongoClient(url.split("?", 1)[0])  # the query holds chatmem's options
        self.coll = self.client[_mongo_database(url)][_name()]
        self.coll.create_index([("conversation_id", 1), ("position", 1)], unique=True)

    def fill(self, cid: str, n: int) -> None:
        docs = _documents(cid, self.take(cid, n))
        for start in range(0, n, FILL_BATCH):
            self.coll.insert_many(docs[start : start + FILL_BATCH])

    def turn(self, cid: str) -> None:
        list(self.coll.find({"conversation_id": cid}).sort("position", -1).limit(READ))
        self.coll.insert_many(_documents(cid, self.take(cid, 2)))

    def close(self) -> None:
        self.coll.drop()
        self.client.close()


class AsyncMongoFloor(_Positions):
    def __init__(self, url: str) -> None:
        from pymongo import AsyncMongoClient

        super().__init__()
        self.client: Any = AsyncMongoClient(url.split("?", 1)[0])
        self.coll = self.client[_mongo_database(url)][_name()]
        self.indexed = False

    async def fill(self, cid: str, n: int) -> None:
        if not self.indexed:
            await self.coll.create_index([("conversation_id", 1), ("position", 1)], unique=True)
            self.indexed = True
        docs = _documents(cid, self.take(cid, n))
        for start in range(0, n, FILL_BATCH):
            await self.coll.insert_many(docs[start : start + FILL_BATCH])

    async def turn(self, cid: str) -> None:
        cursor = self.coll.find({"conversation_id": cid}).sort("position", -1).limit(READ)
        await cursor.to_list()
        await self.coll.insert_many(_documents(cid, self.take(cid, 2)))

    async def close(self) -> None:
        await self.coll.drop()
        await self.client.close()


# --- Cassandra -------------------------------------------------------------------------------


class CassandraFloor(_Positions):
    """Prepared SELECT ... LIMIT 20 on the partition + an unlogged batch of two prepared
    INSERTs, at chatmem's default consistency (LOCAL_QUORUM), token-aware routing."""

    def __init__(self, url: str) -> None:
        from cassandra import ConsistencyLevel
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
        from cassandra.query import BatchStatement, BatchType

        super().__init__()
        parts = urlsplit(url)
        profile = ExecutionProfile(
            load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
            consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        )
        self.cluster = Cluster(
            [parts.hostname or "127.0.0.1"],
            port=parts.port or 9042,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        )
        self.session = self.cluster.connect(parts.path.strip("/"))
        self.table = _name()
        self.session.execute(
            f"CREATE TABLE {self.table} (conversation_id text, position bigint, role text,"
            " content text, PRIMARY KEY (conversation_id, position))"
            " WITH CLUSTERING ORDER BY (position DESC)"
        )
        self.read = self.session.prepare(
            f"SELECT position, role, content FROM {self.table} WHERE conversation_id = ?"
            f" LIMIT {READ}"
        )
        self.insert = self.session.prepare(
            f"INSERT INTO {self.table} (conversation_id, position, role, content)"
            " VALUES (?, ?, ?, ?)"
        )
        self._batch = lambda: BatchStatement(batch_type=BatchType.UNLOGGED)

    def batch(self, cid: str) -> Any:
        batch = self._batch()
        for row in self.take(cid, 2):
            batch.add(self.insert, (cid, *row))
        return batch

    def fill(self, cid: str, n: int) -> None:
        from cassandra.concurrent import execute_concurrent_with_args

        rows = [(cid, *r) for r in self.take(cid, n)]
        execute_concurrent_with_args(self.session, self.insert, rows, concurrency=64)

    def turn(self, cid: str) -> None:
        list(self.session.execute(self.read, (cid,)))
        self.session.execute(self.batch(cid))

    def close(self) -> None:
        self.session.execute(f"DROP TABLE {self.table}")
        self.cluster.shutdown()


def _awaitable(response_future: Any) -> asyncio.Future[Any]:
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[Any] = loop.create_future()

    def settle(rows: Any, exc: BaseException | None) -> None:
        if not waiter.done():
            waiter.set_exception(exc) if exc else waiter.set_result(rows)

    response_future.add_callbacks(
        lambda rows: loop.call_soon_threadsafe(settle, rows, None),
        lambda exc: loop.call_soon_threadsafe(settle, None, exc),
    )
    return waiter


class AsyncCassandraFloor(CassandraFloor):
    """The same statements through ``execute_async``, bridged to asyncio futures."""

    async def fill(self, cid: str, n: int) -> None:  # type: ignore[override]
        await asyncio.to_thread(CassandraFloor.fill, self, cid, n)

    async def turn(self, cid: str) -> None:  # type: ignore[override]
        list(await _awaitable(self.session.execute_async(self.read, (cid,))))
        await _awaitable(self.session.execute_async(self.batch(cid)))

    async def close(self) -> None:  # type: ignore[override]
        CassandraFloor.close(self)


# --- Neo4j -----------------------------------------------------------------------------------


def _neo4j_target(url: str) -> tuple[str, Any, str | None]:
    parts = urlsplit(url)
    auth = (unquote(parts.username), unquote(parts.password or "")) if parts.username else None
    uri = f"{parts.scheme}://{parts.hostname}:{parts.port or 7687}"
    return uri, auth, parts.path.strip("/") or None


class Neo4jFloor(_Positions):
    """One auto-commit read query and one write query (UNWIND of two CREATEs) per turn, on a
    range index over (conversation_id, position). The read orders by both properties of the
    index, so it seeks the conversation and reads the newest 20 in index order."""

    def __init__(self, url: str) -> None:
        import neo4j

        super().__init__()
        uri, auth, self.database = _neo4j_target(url)
        self.driver = neo4j.GraphDatabase.driver(uri, auth=auth)
        self.label = "Floor" + uuid.uuid4().hex[:8]
        self.read = (
            f"MATCH (m:{self.label}) WHERE m.conversation_id = $cid AND m.position >= 0"
            f" RETURN m.position AS position, m.role AS role, m.content AS content"
            f" ORDER BY m.conversation_id DESC, m.position DESC LIMIT {READ}"
        )
        self.write = f"UNWIND $rows AS r CREATE (m:{self.label}) SET m = r"
        with self.driver.session(database=self.database) as session:
            session.run(
                f"CREATE INDEX {self.label}_idx FOR (m:{self.label})"
                " ON (m.conversation_id, m.position)"
            ).consume()
            session.run("CALL db.awaitIndexes(60)").consume()

    def rows(self, cid: str, count: int) -> list[dict[str, Any]]:
        return _documents(cid, self.take(cid, count))

    def fill(self, cid: str, n: int) -> None:
        rows = self.rows(cid, n)
        with self.driver.session(database=self.database) as session:
            for start in range(0, n, FILL_BATCH):
                session.run(self.write, rows=rows[start : start + FILL_BATCH]).consume()

    def turn(self, cid: str) -> None:
        with self.driver.session(database=self.database) as session:
            list(session.run(self.read, cid=cid))
            session.run(self.write, rows=self.rows(cid, 2)).consume()

    def close(self) -> None:
        with self.driver.session(database=self.database) as session:
            session.run(f"DROP INDEX {self.label}_idx").consume()
            session.run(
                f"MATCH (m:{self.label}) CALL (m) {{ DETACH DELETE m }} IN TRANSACTIONS"
            ).consume()
        self.driver.close()


class AsyncNeo4jFloor(_Positions):
    def __init__(self, url: str) -> None:
        import neo4j

        super().__init__()
        uri, auth, self.database = _neo4j_target(url)
        self.driver = neo4j.AsyncGraphDatabase.driver(uri, auth=auth)
        self.label = "Floor" + uuid.uuid4().hex[:8]
        self.read = (
            f"MATCH (m:{self.label}) WHERE m.conversation_id = $cid AND m.position >= 0"
            f" RETURN m.position AS position, m.role AS role, m.content AS content"
            f" ORDER BY m.conversation_id DESC, m.position DESC LIMIT {READ}"
        )
        self.write = f"UNWIND $rows AS r CREATE (m:{self.label}) SET m = r"
        self.indexed = False

    async def fill(self, cid: str, n: int) -> None:
        async with self.driver.session(database=self.database) as session:
            if not self.indexed:
                await (
                    await session.run(
                        f"CREATE INDEX {self.label}_idx FOR (m:{self.label})"
                        " ON (m.conversation_id, m.position)"
                    )
                ).consume()
                await (await session.run("CALL db.awaitIndexes(60)")).consume()
                self.indexed = True
            rows = _documents(cid, self.take(cid, n))
            for start in range(0, n, FILL_BATCH):
                await (
                    await session.run(self.write, rows=rows[start : start + FILL_BATCH])
                ).consume()

    async def turn(self, cid: str) -> None:
        async with self.driver.session(database=self.database) as session:
            await (await session.run(self.read, cid=cid)).data()
            rows = _documents(cid, self.take(cid, 2))
            await (await session.run(self.write, rows=rows)).consume()

    async def close(self) -> None:
        async with self.driver.session(database=self.database) as session:
            await (await session.run(f"DROP INDEX {self.label}_idx")).consume()
            await (
                await session.run(
                    f"MATCH (m:{self.label}) CALL (m) {{ DETACH DELETE m }} IN TRANSACTIONS"
                )
            ).consume()
        await self.driver.close()


_FLOORS: dict[str, tuple[type, type]] = {
    "memory": (MemoryFloor, AsyncMemoryFloor),
    "sqlite": (SqliteFloor, AsyncSqliteFloor),
    "postgresql": (PostgresFloor, AsyncPostgresFloor),
    "postgres": (PostgresFloor, AsyncPostgresFloor),
    "mysql": (MariaDbFloor, AsyncMariaDbFloor),
    "mariadb": (MariaDbFloor, AsyncMariaDbFloor),
    "redis": (RedisFloor, AsyncRedisFloor),
    "mongodb": (MongoFloor, AsyncMongoFloor),
    "cassandra": (CassandraFloor, AsyncCassandraFloor),
    "bolt": (Neo4jFloor, AsyncNeo4jFloor),
    "neo4j": (Neo4jFloor, AsyncNeo4jFloor),
}


def floor_for(url: str, is_async: bool) -> Any:
    """Build the floor for a chatmem repository URL (the scheme picks the driver)."""
    scheme = url.split("://", 1)[0].split("+", 1)[0].lower()
    if scheme not in _FLOORS:
        raise SystemExit(f"no floor for scheme {scheme!r}; known: {', '.join(sorted(_FLOORS))}")
    return _FLOORS[scheme][1 if is_async else 0](url)

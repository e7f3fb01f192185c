"""``storage``: bytes per stored message, as the server reports them.

Stores 100 conversations of 20 messages (so that tables, indexes and keys exist), reads the
size the server reports for the run's own tables, keys or collections (a new prefix, dropped
afterwards), stores ``--sizes`` more messages (200 characters each) and divides the growth by
their number. Cassandra and Neo4j report no per-table size over their query protocols: they
are not measured here.
"""

from __future__ import annotations

import uuid
from typing import Any

from benchmarks.harness import Run, backend_of, history, repository_options, scenario
from chatmem.messages import encode_message
from chatmem_repositories import create_repository

PREFIX_OPTION = {
    "postgresql": "table_prefix",
    "mysql": "table_prefix",
    "mariadb": "table_prefix",
    "sqlite": "table_prefix",
    "cassandra": "table_prefix",
    "redis": "key_prefix",
    "mongodb": "collection_prefix",
    "bolt": "label_prefix",
    "neo4j": "label_prefix",
}


def _sql_login(url: str) -> dict[str, Any]:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return {
        "host": parts.hostname,
        "port": parts.port,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "database": parts.path.strip("/"),
    }


def _postgresql_bytes(url: str, prefix: str, drop: bool) -> int:
    import psycopg

    login = _sql_login(url)
    login["dbname"] = login.pop("database")
    with psycopg.connect(**login, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s", (prefix + "%",)
        ).fetchall()
        names = [r[0] for r in rows]
        size = 0
        for name in names:
            size += conn.execute("SELECT pg_total_relation_size(%s)", (name,)).fetchone()[0]
            if drop:
                conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')
        return size


def _mysql_bytes(url: str, prefix: str, drop: bool) -> int:
    import pymysql

    conn = pymysql.connect(**_sql_login(url), autocommit=True)
    like = (prefix + "%",)
    with conn.cursor() as cur:
        where = "WHERE table_schema = DATABASE() AND table_name LIKE %s"
        cur.execute(f"SELECT table_name FROM information_schema.tables {where}", like)
        names = [r[0] for r in cur.fetchall()]
        for name in names:
            cur.execute(f"ANALYZE TABLE `{name}`")  # InnoDB updates its sizes lazily
            cur.fetchall()
        cur.execute(
            f"SELECT COALESCE(SUM(data_length + index_length), 0)"
            f" FROM information_schema.tables {where}",
            like,
        )
        size = int(cur.fetchone()[0])
        for name in names if drop else []:
            cur.execute(f"DROP TABLE IF EXISTS `{name}`")
    conn.close()
    return size


def _sqlite_bytes(url: str, prefix: str, drop: bool) -> int:
    import contextlib
    import sqlite3

    # sqlite3's own context manager ends a transaction, not the connection: close it.
    path = url.split("://", 1)[1].split("?", 1)[0][1:]
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        used = conn.execute("PRAGMA page_count").fetchone()[0]
        used -= conn.execute("PRAGMA freelist_count").fetchone()[0]
        return int(used * conn.execute("PRAGMA page_size").fetchone()[0])


def _redis_bytes(url: str, prefix: str, drop: bool) -> int:
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(f"*{prefix}*", count=1000))  # {prefix:id}:... keys
    size = sum(client.memory_usage(k, samples=0) or 0 for k in keys)
    if drop and keys:
        client.delete(*keys)
    client.close()
    return size


def _mongodb_bytes(url: str, prefix: str, drop: bool) -> int:
    from pymongo import MongoClient

    client: Any = MongoClient(url.split("?", 1)[0])
    db = client.get_default_database()
    size = 0
    for name in db.list_collection_names():
        if name.startswith(prefix):
            stats = db.command("collStats", name)
            size += int(stats.get("size", 0)) + int(stats.get("totalIndexSize", 0))
            if drop:
                db.drop_collection(name)
    client.close()
    return size


# Cassandra and Neo4j report no per-table size over their query protocols.
SIZES = {
    "postgresql": _postgresql_bytes,
    "mysql": _mysql_bytes,
    "mariadb": _mysql_bytes,
    "sqlite": _sqlite_bytes,
    "redis": _redis_bytes,
    "mongodb": _mongodb_bytes,
}


def _server_bytes(url: str, scheme: str, prefix: str, drop: bool = False) -> int | None:
    """What the server says the prefix's tables, keys or collections take (None: unknown)."""
    size = SIZES.get(scheme)
    return None if size is None else size(url, prefix, drop)


def _size(url: str, prefix: str, drop: bool = False) -> int:
    return SIZES[backend_of(url)](url, prefix, drop)


@scenario("storage", backends=("sqlite", "postgresql", "mariadb", "redis"), sizes=(20_000,))
def storage(run: Run) -> None:
    """Bytes per stored 200-character message, as the server reports its tables or keys."""
    assert run.url
    backend = backend_of(run.url)
    prefix = f"sz{uuid.uuid4().hex[:6]}_"
    repository = create_repository(
        run.url, **repository_options(run.url), **{PREFIX_OPTION[backend]: prefix}
    )
    ids = [f"size-{i}" for i in range(100)]
    total = run.sizes[-1]
    per = max(2, total // len(ids))
    try:
        for cid in ids:
            repository.append(cid, history(20))
        before = _size(run.url, prefix)
        for cid in ids:
            messages = history(per, start=1000)
            for at in range(0, per, 500):
                repository.append(cid, messages[at : at + 500])
        after = _size(run.url, prefix)
        sample = history(2)
        encoded = sum(len(encode_message(m).encode()) for m in sample) / len(sample)
        run.record(
            {"messages": per * len(ids), "text_characters": 200},
            results={
                "bytes_per_message": round((after - before) / (per * len(ids))),
                "encoded_message_bytes": round(encoded),
            },
        )
    finally:
        for cid in ids:
            repository.delete_by_conversation_id(cid)
        repository.close()
        _size(run.url, prefix, drop=True)

"""``prune`` and ``doctor``: retention and health checks for a configured repository."""

from __future__ import annotations

import importlib.metadata
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

from chatmem import (
    ChatMemoryLog,
    MessageType,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryTimeoutError,
    UserMessage,
    __version__,
)
from chatmem_cli._transfer import iter_conversations

__all__ = ["Check", "PruneReport", "doctor_checks", "prune_older_than"]


@dataclass
class PruneReport:
    """What ``prune --older-than`` did (or would do, in a dry run)."""

    conversations: int = 0
    """Conversations looked at."""
    messages: int = 0
    """Messages deleted (or counted, in a dry run)."""
    emptied: int = 0
    """Conversations deleted whole because nothing in them is recent."""


def _older_count(repository: ChatMemoryLog, conversation_id: str, cutoff: datetime) -> int:
    count = 0
    after = None
    while True:
        page = repository.find_history(conversation_id, until=cutoff, after=after, limit=500)
        count += sum(1 for s in page if s.message.type is not MessageType.SYSTEM)
        if len(page) < 500:
            return count
        after = page[-1].position


def prune_older_than(
    repository: ChatMemoryLog,
    age: timedelta,
    *,
    owner: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PruneReport:
    """Delete messages created more than ``age`` ago.

    In each conversation the messages before the first recent one go (system messages stay,
    so the current instructions survive). A conversation with no recent message at all is
    deleted whole.

    Args:
        repository: Where to prune.
        age: How old a message must be to go.
        owner: Only this owner's conversations.
        dry_run: Count, delete nothing.
        now: The current time (for tests).
    """
    cutoff = (now or datetime.now(UTC)) - age
    report = PruneReport()
    # Deleting while paging could shift a backend's cursor, so collect the ids first (ids
    # only, never messages) unless nothing is deleted.
    ids = iter_conversations(repository, owner=owner)
    for conversation_id in list(ids) if not dry_run else ids:
        report.conversations += 1
        recent = repository.find_history(conversation_id, since=cutoff, limit=1)
        if not recent:
            old = _older_count(repository, conversation_id, cutoff)
            report.messages += old
            report.emptied += 1
            if not dry_run:
                repository.delete_by_conversation_id(conversation_id)
            continue
        if dry_run:
            report.messages += _older_count(repository, conversation_id, cutoff)
        else:
            report.messages += repository.delete_before(conversation_id, recent[0].position)
    return report


@dataclass
class Check:
    """One doctor check: its name, whether it passed, and what it found."""

    name: str
    """What was checked."""
    ok: bool
    """Whether it passed."""
    detail: str
    """What was found, or what to do about it."""


DRIVERS = {
    "sqlite": ["sqlalchemy", "aiosqlite"],
    "postgresql": ["sqlalchemy", "psycopg", "asyncpg"],
    "postgres": ["sqlalchemy", "psycopg", "asyncpg"],
    "mysql": ["sqlalchemy", "pymysql", "aiomysql"],
    "mariadb": ["sqlalchemy", "pymysql", "aiomysql"],
    "mssql": ["sqlalchemy"],
    "oracle": ["sqlalchemy"],
    "mongodb": ["pymongo"],
    "redis": ["redis"],
    "rediss": ["redis"],
    "cassandra": ["cassandra-driver"],
    "neo4j": ["neo4j"],
    "bolt": ["neo4j"],
}


SCHEMA_HINT = (
    " (SQL: create the tables once with ?initialize_schema=always, or with your migration tool)"
)


def _versions(url: str) -> str:
    scheme = urlsplit(url).scheme.split("+")[0].lower()
    found = [f"chatmem {__version__}", f"Python {platform.python_version()}"]
    for name in DRIVERS.get(scheme, []):
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def _server_version(repository: ChatMemoryLog) -> str:
    # Backends may report their server; the contract does not require it.
    for name in ("server_version", "server_info"):
        method = getattr(repository, name, None)
        if callable(method):
            return str(method())
    return "not reported by this backend"


def doctor_checks(
    repository: ChatMemoryLog, url: str, *, write: bool = True, samples: int = 20
) -> list[Check]:
    """Check a repository: reachable, schema usable, versions, round-trip latency.

    Args:
        repository: The repository, already created from ``url``.
        url: Its URL, for the driver versions.
        write: Also append, read back and delete a probe message in a conversation of its
            own (proves the schema is present and writable).
        samples: Round trips timed for the latency figure.
    """
    checks = [Check("versions", True, _versions(url))]
    try:
        first = _timed(lambda: repository.list_conversations(limit=1))
    except (RepositoryConnectionError, RepositoryTimeoutError) as exc:
        checks.append(Check("reachable", False, f"{type(exc).__name__}: {exc}"))
        return checks
    except RepositoryError as exc:  # the server answered: what failed is the schema
        checks.append(Check("reachable", True, "the server answered"))
        checks.append(Check("schema", False, f"{exc}{SCHEMA_HINT}"))
        return checks
    checks.append(Check("reachable", True, f"first round trip {first:.1f} ms"))
    checks.append(Check("server", True, _server_version(repository)))
    if write:
        probe = f"chatmem-doctor-{uuid4().hex}"
        try:
            message = UserMessage("doctor probe")
            repository.append(probe, [message])
            back = repository.find_recent(probe, 1)
            ok = [s.message.id for s in back] == [message.id]
            checks.append(
                Check(
                    "schema",
                    ok,
                    "append, read back and delete work" if ok else "probe message not read back",
                )
            )
        except RepositoryError as exc:  # a missing table or a read-only user shows up here
            checks.append(Check("schema", False, f"{exc}{SCHEMA_HINT}"))
        finally:
            repository.delete_by_conversation_id(probe)
    timings = [
        _timed(lambda: repository.find_recent("chatmem-doctor-latency", 20)) for _ in range(samples)
    ]
    median = statistics.median(timings)
    checks.append(
        Check(
            "latency",
            True,
            f"memory read (find_recent, 20 messages): median {median:.2f} ms, "
            f"max {max(timings):.2f} ms over {samples} round trips",
        )
    )
    return checks

"""``doctor``: is the configured repository usable, and what is it running on?"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from uuid import uuid4

from chatmem import (
    ChatMemoryLog,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryTimeoutError,
    UserMessage,
    __version__,
)
from chatmem.backend import split_url
from chatmem.repository import ServerInfo

__all__ = ["Check", "doctor_checks", "drivers_for", "reach_server"]


@dataclass
class Check:
    """One doctor check: its name, whether it passed, and what it found."""

    name: str
    """What was checked."""
    ok: bool
    """Whether it passed."""
    detail: str
    """What was found, or what to do about it."""


# The distribution behind each driver a URL can name (the import name may differ).
_DISTRIBUTIONS = {"cassandra": "cassandra-driver", "sqlite": None}
# The synchronous driver chatmem picks when an SQL URL names none (the CLI is synchronous).
_DEFAULT_SQL_DRIVER = {
    "postgresql": "psycopg",
    "postgres": "psycopg",
    "mysql": "pymysql",
    "mariadb": "pymysql",
}
_NON_SQL = {
    "mongodb": "pymongo",
    "mongodb+srv": "pymongo",
    "redis": "redis",
    "rediss": "redis",
    "redis+cluster": "redis",
    "rediss+cluster": "redis",
    "redis+sentinel": "redis",
    "rediss+sentinel": "redis",
    "cassandra": "cassandra-driver",
    "neo4j": "neo4j",
    "neo4j+s": "neo4j",
    "bolt": "neo4j",
    "bolt+s": "neo4j",
}
_SQL = {"sqlite", "postgresql", "postgres", "mysql", "mariadb", "mssql", "oracle"}
_DEFAULT_PORTS = {
    "postgresql": 5432,
    "postgres": 5432,
    "mysql": 3306,
    "mariadb": 3306,
    "mssql": 1433,
    "oracle": 1521,
    "mongodb": 27017,
    "redis": 6379,
    "rediss": 6379,
    "redis+sentinel": 26379,  # the URL names the sentinels
    "rediss+sentinel": 26379,
    "cassandra": 9042,
    "neo4j": 7687,
    "neo4j+s": 7687,
    "bolt": 7687,
    "bolt+s": 7687,
}


def drivers_for(url: str) -> list[str]:
    """Return the distributions a URL's repository uses, and only those.

    Args:
        url: A repository URL such as ``postgresql+psycopg://...``.

    Raises:
        ConfigurationError: If the URL is malformed.
    """
    scheme = split_url(url).scheme.lower()
    if scheme in _NON_SQL:
        return [_NON_SQL[scheme]]
    base, _, driver = scheme.partition("+")
    if base not in _SQL:
        return []
    driver = driver or _DEFAULT_SQL_DRIVER.get(base, "")
    name = _DISTRIBUTIONS.get(driver, driver)
    return ["sqlalchemy"] + ([name] if name else [])


def _versions(url: str) -> str:
    found = [f"chatmem {__version__}", f"Python {platform.python_version()}"]
    for name in drivers_for(url):
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def _endpoints(url: str) -> list[tuple[str, int]]:
    parts = split_url(url)
    scheme = parts.scheme.lower()
    port = _DEFAULT_PORTS.get(scheme) or _DEFAULT_PORTS.get(scheme.partition("+")[0])
    if port is None:
        return []  # sqlite, memory, mongodb+srv (DNS decides), custom schemes
    hosts = parts.netloc.rpartition("@")[2]
    endpoints = []
    for host in filter(None, hosts.split(",")):
        # "[::1]:5432", "db:5432", "db"
        match = re.fullmatch(
            r"\[(?P<v6>[^\]]+)\](?::(?P<p6>\d+))?|(?P<h>[^:]+)(?::(?P<p>\d+))?", host
        )
        if match is None:
            continue
        name = unquote(match["v6"] or match["h"])
        endpoints.append((name, int(match["p6"] or match["p"] or port)))
    return endpoints


def reach_server(url: str, timeout: float = 3.0) -> Check | None:
    """Open a TCP connection to the URL's server(s), before any driver is involved.

    A driver's own report of a server that is down can take seconds and many lines (server
    selection, topology dumps, a schema step that failed); this says it in one.

    Args:
        url: The repository URL.
        timeout: Seconds to wait for each host.

    Returns:
        A failed ``reachable`` check naming every host tried, or None when a host answered
        (or the URL has no network server, such as SQLite).

    Raises:
        ConfigurationError: If the URL is malformed (such as an unclosed IPv6 bracket).
    """
    sqlite = _sqlite_problem(url)
    if sqlite is not None:
        return sqlite
    endpoints = _endpoints(url)
    problems = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            shown = f"[{host}]" if ":" in host else host  # "::1:5432" would read ambiguously
            problems.append(f"{shown}:{port} ({reason.lower()})")
    if not problems:
        return None
    return Check(
        "reachable",
        False,
        f"cannot connect to {', '.join(problems)}: is the server running, and are the host "
        "and port in the URL right?",
    )


def _sqlite_problem(url: str) -> Check | None:
    parts = split_url(url)
    if parts.scheme.partition("+")[0].lower() != "sqlite" or parts.path in ("", "/"):
        return None
    path = Path(unquote(parts.path[1:]))  # sqlite:///rel.db -> rel.db, sqlite:////abs -> /abs
    if str(path) == ":memory:" or path.parent.is_dir():
        return None
    return Check(
        "reachable",
        False,
        f"the directory {path.parent} does not exist: create it, or give another path for "
        "the SQLite file",
    )


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_MISSING_TABLE = re.compile(
    r"(?:Table '(?P<my>[^']+)' doesn't exist|relation \"(?P<pg>[^\"]+)\" does not exist"
    r"|no such table: (?P<lite>\S+))"
)
SCHEMA_HINT = (
    "create them once with ?initialize_schema=always in the URL, or with your migration tool"
)


def _schema_problem(exc: RepositoryError) -> str:
    match = _MISSING_TABLE.search(str(exc))
    if match:
        table = match["my"] or match["pg"] or match["lite"]
        return f"the chatmem tables are missing ({table} does not exist): {SCHEMA_HINT}"
    return f"{_one_line(exc)} ({SCHEMA_HINT})"


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def _server_version(repository: ChatMemoryLog) -> str:
    # ServerInfo is optional in the contract: every built-in backend has it, a third-party
    # one may not.
    if not isinstance(repository, ServerInfo):
        return "not reported by this backend"
    return repository.server_version()


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
        checks.append(Check("reachable", False, _one_line(exc)))
        return checks
    except RepositoryError as exc:  # the server answered: what failed is the schema
        checks.append(Check("reachable", True, "the server answered"))
        checks.append(Check("schema", False, _schema_problem(exc)))
        return checks
    checks.append(Check("reachable", True, f"first round trip {first:.1f} ms"))
    try:
        checks.append(Check("server", True, _server_version(repository)))
    except RepositoryError as exc:
        checks.append(Check("server", False, _one_line(exc)))
    if write:
        checks.append(_probe(repository))
    checks.append(_encryption(repository))
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


def _encryption(repository: ChatMemoryLog) -> Check:
    # The probe above went through the encrypted log when it is on: sealing and opening
    # with the configured key worked, so only the key's id is left to show.
    keys = getattr(repository, "keys", None)  # an EncryptedLog's (cryptography is optional)
    if keys is None:
        return Check("encryption", True, "off (add ?encryption=env to encrypt at rest)")
    return Check("encryption", True, f"on, new data keys wrapped by {keys.current_key_id!r}")


def _probe(repository: ChatMemoryLog) -> Check:
    probe = f"chatmem-doctor-{uuid4().hex}"
    try:
        message = UserMessage("doctor probe")
        repository.append(probe, [message])
        back = repository.find_recent(probe, 1)
        ok = [s.message.id for s in back] == [message.id]
        detail = "append, read back and delete work" if ok else "probe message not read back"
        return Check("schema", ok, detail)
    except RepositoryError as exc:  # a missing table or a read-only user shows up here
        return Check("schema", False, _schema_problem(exc))
    finally:
        repository.delete_by_conversation_id(probe)

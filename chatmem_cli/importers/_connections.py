"""Opening the databases other libraries stored conversations in (drivers imported when used).

Server URLs are read with the repositories' own parsing (``chatmem_repositories``), so a
source URL means what the same URL means to a chatmem repository; what that parsing refuses
becomes a :class:`~chatmem_cli.importers._conversations.SourceError` naming the source kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from chatmem.exceptions import ConfigurationError
from chatmem_cli.importers._conversations import SourceError

__all__ = [
    "keys_with_prefix",
    "libpq_url",
    "redis_client",
    "refuse_repository_options",
    "require",
    "source_errors",
    "sql_table",
]


def require(module: str, extra: str) -> ModuleType:
    """Import a source's driver or framework, naming the install line when it is missing.

    Args:
        module: The package to import.
        extra: The chatmem extra that installs it.

    Raises:
        ImportError: If the package is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f'this chatmem importer needs {module!r}: pip install "chatmem[{extra}]"'
        ) from exc


@contextmanager
def source_errors(kind: str) -> Iterator[None]:
    """Turn what the repositories' URL parsing refuses into a :class:`SourceError`.

    Args:
        kind: The source kind, which starts the message (``"spring-ai-neo4j"``).
    """
    try:
        yield
    except ConfigurationError as exc:
        raise SourceError(f"{kind}: {exc}") from None


def refuse_repository_options(kind: str, options: BaseModel, used: Collection[str]) -> None:
    """Refuse URL options of a repository that mean nothing to a source (``ttl``, prefixes...).

    Args:
        kind: The source kind, for the message.
        options: What the repository's parsing found in the URL.
        used: The options the source applies (timeouts, the database).

    Raises:
        SourceError: Naming the options the source would leave unapplied.
    """
    unused = sorted(options.model_fields_set - set(used))
    if unused:
        raise SourceError(
            f"{kind}: the URL option(s) {', '.join(unused)} apply to a chatmem repository, "
            f"not to a source; a source takes {', '.join(sorted(used))}"
        )


def redis_client(kind: str, url: str) -> Any:
    """Build a client of the Redis server a URL names, as the redis repository builds its own.

    The URL takes the repository's ``db``, timeouts and redis-py connection parameters. A
    Redis Cluster is refused: a source is read from one server.

    Args:
        kind: The source kind, for messages.
        url: A ``redis://`` or ``rediss://`` URL.

    Raises:
        SourceError: For a cluster URL, or one the repository's parsing refuses.
    """
    redis = require("redis", "redis")
    from chatmem_repositories.redis._options import is_cluster_url, parse_url

    with source_errors(kind):
        if is_cluster_url(url):
            raise SourceError(f"{kind}: a source is read from one Redis server, not a cluster")
        parsed = parse_url(url, {})
    refuse_repository_options(kind, parsed.options, ("db", "connect_timeout", "read_timeout"))
    arguments = {**parsed.options.client_kwargs(), **parsed.driver_options}
    return redis.Redis.from_url(parsed.url, **arguments)


def keys_with_prefix(client: Any, prefix: str) -> list[bytes]:
    """Return every key of a Redis database that starts with ``prefix``, sorted."""
    pattern = "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix) + "*"
    return sorted(client.scan_iter(match=pattern, count=1000))


def libpq_url(url: str) -> str:
    """Return a PostgreSQL URL as psycopg reads it (no SQLAlchemy driver name in the scheme)."""
    for scheme in ("postgresql+psycopg://", "postgresql+asyncpg://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql://" + url[len(scheme) :]
    return url


def sql_table(kind: str, url: str, table_name: str, *, fold_case: bool = False) -> tuple[Any, Any]:
    """Open a SQLAlchemy engine and reflect a source's table.

    Args:
        kind: The source kind, for the message.
        url: A SQLAlchemy URL.
        table_name: The table.
        fold_case: Also look for the name in lower case (PostgreSQL folds the unquoted
            names some libraries create).

    Returns:
        The engine (the caller disposes of it) and the table.

    Raises:
        SourceError: If the table is not there (the engine is disposed of).
    """
    sqlalchemy = require("sqlalchemy", "sql")
    engine = sqlalchemy.create_engine(url)
    names = [table_name]
    if fold_case and table_name.lower() != table_name:
        names.append(table_name.lower())
    for name in names:
        try:
            return engine, sqlalchemy.Table(name, sqlalchemy.MetaData(), autoload_with=engine)
        except sqlalchemy.exc.NoSuchTableError:
            continue
    engine.dispose()
    also = f" (nor {names[1]!r})" if len(names) > 1 else ""
    raise SourceError(f"{kind}: no table {table_name!r}{also}")

"""Pick a repository backend from a URL scheme: registered, then built-in, then entry points.

This mirrors how SQLAlchemy finds dialects: a scheme registered at run time wins, then the
backends shipped here, then any installed package that advertises one in the
``chatmem.repositories`` entry-point group. An entry point names a
:class:`RepositoryBackend` object.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ConfigDict

from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
from chatmem.backend import (
    Duration,
    did_you_mean,
    parse_url_options,
    redact_url,
    split_query,
    split_url,
)
from chatmem.exceptions import ConfigurationError
from chatmem.repository import AsyncOwnedChatMemoryLog, OwnedChatMemoryLog

__all__ = [
    "ENTRY_POINT_GROUP",
    "RepositoryBackend",
    "create_async_repository",
    "create_repository",
    "register_repository",
    "unregister_repository",
]

ENTRY_POINT_GROUP = "chatmem.repositories"
"""Entry-point group where third-party packages advertise backends."""


@dataclass(frozen=True)
class RepositoryBackend:
    """How to build a backend's sync and async repositories from a URL.

    Attributes:
        create: ``create(url, **options)`` returning a sync repository, an
            :class:`~chatmem.repository.OwnedChatMemoryLog`.
        create_async: ``create_async(url, **options)`` returning an async repository, an
            :class:`~chatmem.repository.AsyncOwnedChatMemoryLog`.
    """

    create: Callable[..., Any]
    create_async: Callable[..., Any]


@dataclass(frozen=True)
class _Builtin:
    module: str
    sync_name: str
    async_name: str
    extra: str


_SQL = ("chatmem_repositories.sql", "SqlChatMemoryRepository", "AsyncSqlChatMemoryRepository")
_MONGO = (
    "chatmem_repositories.mongodb",
    "MongoChatMemoryRepository",
    "AsyncMongoChatMemoryRepository",
)
_REDIS = (
    "chatmem_repositories.redis",
    "RedisChatMemoryRepository",
    "AsyncRedisChatMemoryRepository",
)
_CASSANDRA = (
    "chatmem_repositories.cassandra",
    "CassandraChatMemoryRepository",
    "AsyncCassandraChatMemoryRepository",
)
_NEO4J = (
    "chatmem_repositories.neo4j",
    "Neo4jChatMemoryRepository",
    "AsyncNeo4jChatMemoryRepository",
)

_BUILTINS: dict[str, _Builtin] = {
    "sqlite": _Builtin(*_SQL, "sqlite"),
    "postgresql": _Builtin(*_SQL, "postgresql"),
    "postgres": _Builtin(*_SQL, "postgresql"),
    "mysql": _Builtin(*_SQL, "mysql"),
    "mariadb": _Builtin(*_SQL, "mysql"),
    "mssql": _Builtin(*_SQL, "sql"),
    "oracle": _Builtin(*_SQL, "sql"),
    "mongodb": _Builtin(*_MONGO, "mongodb"),
    "mongodb+srv": _Builtin(*_MONGO, "mongodb"),
    "redis": _Builtin(*_REDIS, "redis"),
    "rediss": _Builtin(*_REDIS, "redis"),
    "cassandra": _Builtin(*_CASSANDRA, "cassandra"),
    "neo4j": _Builtin(*_NEO4J, "neo4j"),
    "neo4j+s": _Builtin(*_NEO4J, "neo4j"),
    "neo4j+ssc": _Builtin(*_NEO4J, "neo4j"),
    "bolt": _Builtin(*_NEO4J, "neo4j"),
    "bolt+s": _Builtin(*_NEO4J, "neo4j"),
    "bolt+ssc": _Builtin(*_NEO4J, "neo4j"),
}

_registered: dict[str, RepositoryBackend] = {}


class _MemoryOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ttl: Duration | None = None
    clock: Callable[[], datetime] | None = None  # keyword only: a URL holds no callable


def _memory(is_async: bool) -> Callable[..., Any]:
    def create(url: str, **options: Any) -> Any:
        # No driver, so no driver parameters: every URL option is one of chatmem's.
        parsed = parse_url_options(_MemoryOptions, url, options, backend="memory")
        if parsed.driver_options:
            raise ConfigurationError("the memory repository has no driver: drop driver_options")
        cls = AsyncInMemoryChatMemoryRepository if is_async else InMemoryChatMemoryRepository
        return cls(ttl=parsed.options.ttl, clock=parsed.options.clock)

    return create


_MEMORY = RepositoryBackend(_memory(False), _memory(True))


def register_repository(scheme: str, backend: RepositoryBackend) -> None:
    """Register a backend for a URL scheme; it wins over built-ins and entry points.

    Args:
        scheme: The URL scheme, such as ``"mystore"``.
        backend: How to build its repositories.
    """
    _registered[scheme.lower()] = backend


def unregister_repository(scheme: str) -> None:
    """Remove a backend registered with :func:`register_repository` (no error if absent)."""
    _registered.pop(scheme.lower(), None)


def _scheme_of(url: str) -> str:
    if not isinstance(url, str) or "://" not in url:
        raise ConfigurationError(
            f"repository URL must look like scheme://..., got {redact_url(str(url))!r}"
        )
    return split_url(url).scheme.lower()


def _builtin_backend(scheme: str, spec: _Builtin) -> RepositoryBackend:
    try:
        module = importlib.import_module(spec.module)
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] in {"chatmem", "chatmem_repositories"}:
            raise  # chatmem's own module is broken: not a missing driver, so no pip line
        raise ConfigurationError(
            f"the {scheme!r} repository needs a driver that is not installed ({exc.name}): "
            f'pip install "chatmem[{spec.extra}]"'
        ) from exc
    sync_cls, async_cls = getattr(module, spec.sync_name), getattr(module, spec.async_name)
    return RepositoryBackend(sync_cls.from_url, async_cls.from_url)


def _entry_point_backend(scheme: str) -> RepositoryBackend | None:
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name.lower() == scheme:
            backend = entry_point.load()
            if not isinstance(backend, RepositoryBackend):
                raise ConfigurationError(
                    f"entry point {entry_point.value!r} for scheme {scheme!r} is not a "
                    "RepositoryBackend"
                )
            return backend
    return None


def _resolve(scheme: str) -> RepositoryBackend:
    if scheme in _registered:
        return _registered[scheme]
    if scheme == "memory":
        return _MEMORY
    for candidate in (scheme, scheme.split("+", 1)[0]):
        if candidate in _BUILTINS:
            return _builtin_backend(scheme, _BUILTINS[candidate])
    found = _entry_point_backend(scheme)
    if found is not None:
        return found
    known = {"memory", *_BUILTINS, *_registered}
    known |= {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    raise ConfigurationError(f"unknown repository scheme {scheme!r}{did_you_mean(scheme, known)}")


def create_repository(url: str, **options: Any) -> OwnedChatMemoryLog:
    """Create a sync repository from a URL.

    The URL's scheme picks the backend; its query string and ``options`` are merged (keywords
    win) and validated by the backend. The repository owns its connections: close it, or use
    it as a context manager.

    The return type is the protocol every backend implements: the log methods, ``close`` and
    the context manager. A backend's own methods and the optional capabilities
    (:class:`~chatmem.repository.SummaryStore`...) are reached with ``isinstance``.

    Example:
        ```python
        repository = create_repository("sqlite:///chat.db")
        repository = create_repository("redis://localhost:6379/0?key_prefix=app", ttl=3600)
        ```

    Args:
        url: Such as ``memory://``, ``sqlite:///chat.db``, ``postgresql+psycopg://...``,
            ``redis://...``, ``mongodb://...``, ``cassandra://...``, ``bolt://...``.
        **options: Backend options.

    Raises:
        ConfigurationError: For an unknown scheme or option (with a suggestion), a bad value,
            or a missing driver (with the ``pip install`` line).
    """
    # Backends are looked up at run time, so their factories are typed Any; the protocol is
    # their documented contract, which the built-in ones meet.
    url, keys, options = _take_encryption(url, options)
    repository: OwnedChatMemoryLog = _resolve(_scheme_of(url)).create(url, **options)
    if keys is None:
        return repository
    from chatmem.encryption import EncryptedLog  # the optional extra

    return EncryptedLog(repository, keys)


def create_async_repository(url: str, **options: Any) -> AsyncOwnedChatMemoryLog:
    """Create an async repository from a URL; see :func:`create_repository`.

    Args:
        url: The repository URL.
        **options: Backend options.
    """
    # Typed as in create_repository: the factory is found at run time.
    url, keys, options = _take_encryption(url, options)
    repository: AsyncOwnedChatMemoryLog = _resolve(_scheme_of(url)).create_async(url, **options)
    if keys is None:
        return repository
    from chatmem.encryption import AsyncEncryptedLog  # the optional extra

    return AsyncEncryptedLog(repository, keys)


def _take_encryption(url: str, options: dict[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    """Take the ``encryption`` option out of the URL and keywords (the keyword wins).

    Every backend takes it, so it is read here and never reaches a backend: ``env`` (keys
    from ``$CHATMEM_ENCRYPTION_KEYS``), ``env:NAME`` (from ``$NAME``), ``file:PATH``, ``off``,
    or (as a keyword) a :class:`~chatmem.encryption.KeyProvider`.
    """
    if "://" in str(url):
        url, query = split_query(url, only={"encryption"})
    else:
        query = {}
    options = dict(options)
    value = options.pop("encryption", query.get("encryption"))
    if value is None or value in ("", "off"):
        return url, None, options
    try:
        from chatmem import encryption  # the optional extra
    except ImportError as exc:
        raise ConfigurationError(
            f"encryption needs a package that is not installed ({exc.name}): "
            'pip install "chatmem[encryption]"'
        ) from exc
    if isinstance(value, encryption.KeyProvider):
        return url, value, options
    if not isinstance(value, str):
        raise ConfigurationError(
            f"encryption must be 'env', 'env:NAME', 'file:PATH', 'off' or a KeyProvider, "
            f"got {type(value).__name__}"
        )
    kind, _, argument = value.partition(":")
    if kind == "env":
        return url, encryption.EnvKeyProvider(argument or encryption.ENV_KEYS), options
    if kind == "file" and argument:
        return url, encryption.FileKeyProvider(argument), options
    raise ConfigurationError(
        f"encryption must be 'env', 'env:NAME', 'file:PATH' or 'off', got {value!r}"
    )

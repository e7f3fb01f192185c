"""Options of the Neo4j repository and how a URL becomes driver arguments (no I/O).

The URL option rule (:func:`~chatmem.backend.parse_url_options`): every query
parameter is one of :class:`Neo4jOptions`; the backend passes no URL parameter through to
the driver (:data:`DRIVER_PARAMETERS` is empty), so any other ``GraphDatabase.driver``
argument goes in ``driver_options={...}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from chatmem.backend import (
    Duration,
    InitializeSchema,
    parse_url_options,
    redact_url,
    split_url,
)
from chatmem.exceptions import ConfigurationError

__all__ = [
    "BACKEND",
    "DRIVER_PARAMETERS",
    "DriverSettings",
    "Neo4jOptions",
    "check_label_prefix",
    "parse_url",
]

DRIVER_PARAMETERS: frozenset[str] = frozenset()
"""URL query parameters passed to the driver as written: none; other driver arguments go in
``driver_options``."""

BACKEND = "neo4j"
"""The backend name carried by errors."""

SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
"""URL schemes the Neo4j driver understands."""

_LABEL_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")


def check_label_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is safe to put in front of a label, else raise.

    Labels cannot be query parameters, so they are the one thing spliced into Cypher text;
    only an ASCII identifier (or the empty string) is accepted.

    Raises:
        ConfigurationError: If the prefix is not empty and not an ASCII identifier of at
            most 40 characters that starts with a letter.
    """
    if not isinstance(prefix, str) or (prefix and not _LABEL_PREFIX.fullmatch(prefix)):
        raise ConfigurationError(
            f"label_prefix must be empty or an ASCII identifier starting with a letter "
            f"(letters, digits, '_', at most 40 characters), got {prefix!r}"
        )
    return prefix


class Neo4jOptions(BaseModel):
    """Options accepted in the URL query string or as keywords."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database: str | None = None
    """Database name; ``None`` uses the server's home database (the URL path may name it)."""
    label_prefix: str = ""
    """Prepended to the ``Conversation`` and ``Message`` labels, to keep apps apart."""
    ttl: Duration | None = None
    """Expire a conversation this long after its last write; ``None`` keeps it forever."""
    user: str | None = None
    """User name, if not given in the URL."""
    password: SecretStr | None = None
    """Password, if not given in the URL."""
    connect_timeout: Duration = timedelta(seconds=5)
    """How long opening one connection may take."""
    connection_acquisition_timeout: Duration = timedelta(seconds=10)
    """How long waiting for a pooled connection (including opening it) may take."""
    max_transaction_retry_time: Duration = timedelta(seconds=10)
    """How long a transaction is retried after transient errors or a lost server."""
    read_timeout: Duration = timedelta(seconds=30)
    """How long one statement may wait for the server's answer. Past it the connection is
    closed and ``RepositoryTimeoutError`` raised (``RepositoryWriteTimeoutError`` for a
    write that may have been applied). The driver itself waits until the server's
    ``connection.recv_timeout_seconds`` hint (120 s by default), or forever without one."""
    max_connection_pool_size: int = Field(default=100, gt=0)
    """Most connections the driver keeps open."""
    initialize_schema: InitializeSchema = "always"
    """``"always"`` creates the constraints and indexes on first use (``IF NOT EXISTS``);
    ``"never"`` leaves them to you."""

    @field_validator("label_prefix")
    @classmethod
    def _safe_prefix(cls, value: str) -> str:
        try:
            return check_label_prefix(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None


@dataclass(frozen=True)
class DriverSettings:
    """What ``GraphDatabase.driver`` needs, and what the repository keeps from the options."""

    uri: str
    """The driver URI: scheme, host and port only."""
    auth: tuple[str, str] | None
    """User and password, or ``None`` for a server without authentication."""
    config: dict[str, Any]
    """Driver keyword arguments (``driver_options`` last, so they win)."""
    options: Neo4jOptions
    """The validated options."""
    redacted_url: str
    """The URL as given, password hidden, for reprs and errors."""


def _split_url(url: str) -> tuple[str, str | None, str | None, str | None]:
    parts = split_url(url)
    if parts.scheme.lower() not in SCHEMES:
        raise ConfigurationError(
            f"a Neo4j URL starts with one of {', '.join(SCHEMES)}; got {redact_url(url)!r}"
        )
    if "," in parts.netloc.rpartition("@")[2]:
        raise ConfigurationError(
            f"a Neo4j URL names one server, got several in {redact_url(url)!r}; with the "
            "neo4j:// scheme the driver finds the other members of a cluster itself"
        )
    if not parts.hostname:
        raise ConfigurationError(f"the Neo4j URL names no host: {redact_url(url)!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"bad port in Neo4j URL {redact_url(url)!r}: {exc}") from None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    uri = f"{parts.scheme.lower()}://{host}" + (f":{port}" if port else "")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    database = unquote(parts.path.strip("/")) or None
    return uri, user, password, database


def parse_url(url: str, keyword_options: dict[str, Any]) -> DriverSettings:
    """Turn a repository URL and keyword options into driver arguments.

    ``bolt://user:password@host:7687/database?label_prefix=App&ttl=3600``: the user and
    password may come from the URL or the ``user``/``password`` options, the database from
    the path or the ``database`` option.

    Raises:
        ConfigurationError: For another scheme, a missing host, an unknown option or a bad
            value.
    """
    parsed = parse_url_options(
        Neo4jOptions,
        url,
        keyword_options,
        backend=BACKEND,
        driver_parameters=DRIVER_PARAMETERS,
    )
    uri, url_user, url_password, url_database = _split_url(parsed.url)
    options = parsed.options
    if url_database and options.database and url_database != options.database:
        raise ConfigurationError(
            f"the URL path names database {url_database!r} but the database option says "
            f"{options.database!r}"
        )
    database = options.database or url_database
    options = options.model_copy(update={"database": database})
    user = options.user or url_user
    secret = options.password.get_secret_value() if options.password else url_password
    if secret is not None and user is None:
        raise ConfigurationError("a Neo4j password was given without a user")
    auth = (user, secret or "") if user is not None else None
    config: dict[str, Any] = {
        "connection_timeout": options.connect_timeout.total_seconds(),
        "connection_acquisition_timeout": options.connection_acquisition_timeout.total_seconds(),
        "max_transaction_retry_time": options.max_transaction_retry_time.total_seconds(),
        "max_connection_pool_size": options.max_connection_pool_size,
        # Notifications (performance hints and the like) would surface as log lines or,
        # under warnings-as-errors, as failures; the repository's queries are fixed.
        "notifications_min_severity": "OFF",
        "user_agent": "chatmem",
        **parsed.driver_options,
    }
    return DriverSettings(uri, auth, config, options, redact_url(url))

"""Options of the cassandra repository and vector store, and URL parsing (no I/O).

The URL option rule (:func:`~chatmem.backend.parse_url_options`): every query
parameter is one of :class:`CassandraOptions`; the backend passes no URL parameter through
to the driver (:data:`DRIVER_PARAMETERS` is empty), so any other ``Cluster`` argument goes
in ``driver_options={...}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
    "CassandraOptions",
    "ConnectionSettings",
    "Consistency",
    "SerialConsistency",
    "contact_points",
    "parse_url",
]

BACKEND = "cassandra"
"""The backend name carried by errors."""

DRIVER_PARAMETERS: frozenset[str] = frozenset()
"""URL query parameters passed to the driver as written: none (cassandra-driver reads no
URL); other ``Cluster`` arguments go in ``driver_options``."""

# Checked with fullmatch: "^...$" with match would accept a trailing newline.
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")

Consistency = Literal["ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "LOCAL_ONE"]
"""A consistency level of reads and writes."""
SerialConsistency = Literal["SERIAL", "LOCAL_SERIAL"]
"""A consistency level of the Paxos phase."""


class CassandraOptions(BaseModel):
    """Options of the cassandra repository, from the URL query or keywords."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttl: Duration | None = None
    """Expire a conversation this long after its last write (``USING TTL`` on every write)."""
    local_datacenter: str | None = None
    """Datacenter whose nodes are queried; the driver infers it from the contact points."""
    read_consistency: Consistency = "LOCAL_QUORUM"
    """Consistency level of reads."""
    write_consistency: Consistency = "LOCAL_QUORUM"
    """Consistency level of writes (the commit phase of appends)."""
    serial_consistency: SerialConsistency = "LOCAL_SERIAL"
    """Consistency level of the Paxos phase of appends."""
    create_keyspace: bool = False
    """Create the keyspace if it does not exist."""
    replication_factor: int = Field(default=1, ge=1)
    """Replication factor of a created keyspace (SimpleStrategy)."""
    replication: str | None = None
    """``dc1:3,dc2:3`` creates the keyspace with NetworkTopologyStrategy instead."""
    initialize_schema: InitializeSchema = "always"
    """``"always"`` creates the tables if they do not exist; ``"never"`` leaves the schema to
    you."""
    table_prefix: str = "chatmem_"
    """Prefix of the table names: a lowercase letter, then up to 30 lowercase letters,
    digits or underscores."""
    listing_buckets: int = Field(default=16, ge=1, le=1024)
    """Partitions the conversation listing is spread over."""
    connect_timeout: Duration = timedelta(seconds=5)
    """How long to wait for a connection."""
    read_timeout: Duration = timedelta(seconds=10)
    """How long to wait for one statement's answer."""

    @field_validator("table_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        if value and not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", value):
            hint = ""
            if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,30}", value):
                # Cassandra folds unquoted names to lower case: "App_" and "app_" would name
                # the same tables, so only the lowercase spelling is accepted.
                hint = f" (Cassandra folds table names to lower case: use {value.lower()!r})"
            raise ValueError(
                f"must be a lowercase letter, then lowercase letters, digits or '_'{hint}"
            )
        return value

    @field_validator("replication")
    @classmethod
    def _check_replication(cls, value: str | None) -> str | None:
        if value is not None:
            replication_map(value)
        return value


def replication_map(spec: str) -> dict[str, int]:
    """Parse ``dc1:3,dc2:2`` into a map of datacenter to replication factor."""
    result: dict[str, int] = {}
    for part in spec.split(","):
        name, sep, factor = part.strip().partition(":")
        if not sep or not _IDENTIFIER.fullmatch(name) or not factor.isdigit() or int(factor) < 1:
            raise ValueError(f"replication must look like 'dc1:3,dc2:3', got {spec!r}")
        result[name] = int(factor)
    return result


@dataclass(frozen=True)
class ConnectionSettings:
    """Where to connect, taken from the URL."""

    hosts: tuple[str, ...]
    port: int
    keyspace: str
    username: str | None
    password: str | None = None

    def __repr__(self) -> str:
        return (
            f"ConnectionSettings(hosts={self.hosts!r}, port={self.port}, "
            f"keyspace={self.keyspace!r}, username={self.username!r})"
        )


def check_identifier(name: str, what: str) -> str:
    """Return ``name`` if it is a plain CQL identifier (it is written into DDL)."""
    if not _IDENTIFIER.fullmatch(name):
        raise ConfigurationError(
            f"{what} must be a letter then up to 47 letters, digits or underscores, got {name!r}"
        )
    return name


def _port(text: str, url: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise ConfigurationError(
            f"bad port {text!r} in cassandra URL {redact_url(url)!r}: a number from 1 to 65535"
        )
    return int(text)


def _contact_point(item: str, url: str) -> tuple[str, int | None]:
    """Split ``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` into (host, port)."""
    if item.startswith("["):
        host, bracket, rest = item[1:].partition("]")
        if not bracket or not host or (rest and not rest.startswith(":")):
            raise ConfigurationError(f"malformed IPv6 address {item!r} in {redact_url(url)!r}")
        return host, _port(rest[1:], url) if rest else None
    if item.count(":") > 1:
        raise ConfigurationError(
            f"an IPv6 address in a URL goes in brackets, such as [::1]:9042; got {item!r}"
        )
    host, sep, port_text = item.partition(":")
    if not host:
        raise ConfigurationError(f"empty host in cassandra URL {redact_url(url)!r}")
    return host, _port(port_text, url) if sep else None


def parse_url(
    url: str, keyword_options: dict[str, Any]
) -> tuple[ConnectionSettings, CassandraOptions, dict[str, Any]]:
    """Parse ``cassandra://[user:password@]host1[:port],host2[:port]/keyspace?options``.

    Contact points may be names, IPv4 or bracketed IPv6 addresses; they share one port
    (9042 unless given).

    Returns:
        Where to connect, the validated options, and the ``Cluster`` keyword arguments
        from ``driver_options``.

    Raises:
        ConfigurationError: For a malformed URL, host or port, contact points on different
            ports, a bad keyspace or an unknown option.
    """
    parsed = parse_url_options(
        CassandraOptions,
        url,
        keyword_options,
        backend=BACKEND,
        driver_parameters=DRIVER_PARAMETERS,
    )
    parts = split_url(parsed.url)
    if parts.scheme.lower() != "cassandra":
        raise ConfigurationError(f"not a cassandra:// URL: {redact_url(url)!r}")
    hosts, port, username, password = contact_points(parts.netloc, url)
    keyspace = check_identifier(parts.path.strip("/"), "the keyspace (URL path)")
    settings = ConnectionSettings(hosts, port, keyspace, username, password)
    return settings, parsed.options, parsed.driver_options


def contact_points(netloc: str, url: str) -> tuple[tuple[str, ...], int, str | None, str | None]:
    """Read the contact points, their port and the credentials of a URL's authority.

    Args:
        netloc: ``[user:password@]host1[:port],host2[:port]``, as :func:`split_url` gives it;
            no host means ``127.0.0.1``, no port 9042.
        url: The whole URL, for messages (its password hidden).

    Returns:
        The hosts, their port, the user name and the password (``None`` without them).

    Raises:
        ConfigurationError: For a malformed host or port, or contact points on different
            ports.
    """
    userinfo, _, hostinfo = netloc.rpartition("@")
    username = password = None
    if userinfo:
        user, _, secret = userinfo.partition(":")
        username, password = unquote(user), unquote(secret)
    points = [_contact_point(item, url) for item in hostinfo.split(",")] if hostinfo else []
    ports = {port for _, port in points if port is not None}
    if len(ports) > 1:
        raise ConfigurationError(
            f"the contact points of {redact_url(url)!r} name different ports; the driver "
            "uses one port for every node"
        )
    hosts = tuple(host for host, _ in points) or ("127.0.0.1",)
    return hosts, ports.pop() if ports else 9042, username, password

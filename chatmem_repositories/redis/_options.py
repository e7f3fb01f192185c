"""Options of the Redis repository and how a URL becomes a redis-py client (no I/O).

The URL option rule (see :func:`~chatmem.backend.parse_url_options`): a query
parameter is one of :class:`RedisOptions` or one of :data:`DRIVER_PARAMETERS`, which stay in
the URL for redis-py to read; any other redis-py argument goes in ``driver_options={...}``.

A ``redis+cluster://`` (or ``rediss+cluster://``) URL selects Redis Cluster: its comma-separated
``host:port`` seed nodes become redis-py ``RedisCluster`` startup nodes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlunsplit

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, field_validator

from chatmem.backend import (
    Duration,
    ParsedUrl,
    parse_url_options,
    redact_url,
    split_url,
)
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.redis._errors import BACKEND
from chatmem_repositories.redis._schema import check_key_prefix

__all__ = [
    "CLUSTER_SCHEMES",
    "DRIVER_PARAMETERS",
    "RedisOptions",
    "check_server_url",
    "cluster_seeds",
    "is_cluster_url",
    "parse_url",
    "with_db",
]

CLUSTER_SCHEMES: dict[str, str] = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""URL schemes that select Redis Cluster, and the scheme redis-py reads for each node."""

DRIVER_PARAMETERS: tuple[str, ...] = (
    "client_name",
    "health_check_interval",
    "max_connections",
    "socket_keepalive",
    "ssl_ca_certs",
    "ssl_cert_reqs",
    "ssl_certfile",
    "ssl_check_hostname",
    "ssl_keyfile",
    "ssl_min_version",
)
"""redis-py connection parameters a Redis URL may carry; redis-py reads them itself.

Left out on purpose: ``socket_timeout`` and ``socket_connect_timeout`` (chatmem's
``read_timeout`` and ``connect_timeout``), ``retry_on_timeout`` and ``retry_on_error``
(chatmem retries, knowing whether a write may have been applied) and ``protocol`` (the
scripts' replies are read as RESP2).
"""


def check_server_url(url: str) -> str:
    """Return ``url`` if it names one server with a valid port, else raise.

    redis-py reads ``h1:6379,h2:6379`` as host ``h1`` with a bad port; a Sentinel or
    Cluster deployment is used by passing its client to the repository instead.

    Raises:
        ConfigurationError: For several hosts, a malformed port or IPv6 address.
    """
    parts = split_url(url)
    hosts = parts.netloc.rpartition("@")[2]
    if "," in hosts:
        raise ConfigurationError(
            f"a Redis URL names one server, got several in {redact_url(url)!r}; for Redis "
            "Cluster use redis+cluster://host:port,host:port; for Sentinel, pass "
            "Sentinel(...).master_for(...) as the repository's client"
        )
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError as exc:
        raise ConfigurationError(f"bad port in Redis URL {redact_url(url)!r}: {exc}") from None
    return url


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` selects Redis Cluster (``redis+cluster://`` or ``rediss+cluster://``)."""
    return split_url(url).scheme.lower() in CLUSTER_SCHEMES


def cluster_seeds(url: str) -> list[tuple[str, int]]:
    """The seed nodes of a ``redis+cluster://h1:p1,h2:p2`` URL, as (host, port) pairs.

    A port left out is 6379. ``[::1]:7000`` names an IPv6 node.

    Raises:
        ConfigurationError: For an empty host or a malformed port.
    """
    hosts = split_url(url).netloc.rpartition("@")[2]
    seeds = []
    for host in hosts.split(","):
        node = split_url(f"//{host.strip()}")
        try:
            port = node.port or 6379
        except ValueError as exc:
            raise ConfigurationError(
                f"bad port in Redis Cluster URL {redact_url(url)!r}: {exc}"
            ) from None
        if not node.hostname:
            raise ConfigurationError(
                f"a Redis Cluster URL lists seed nodes as host:port,host:port; got an empty "
                f"one in {redact_url(url)!r}"
            )
        seeds.append((node.hostname, port))
    return seeds


def _first_node_url(url: str) -> str:
    """The cluster URL as a plain one for redis-py: its first seed, no database."""
    parts = split_url(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if parts.path not in ("", "/", "/0"):
        raise ConfigurationError(
            f"Redis Cluster has only database 0, got the path {parts.path!r} in {redact_url(url)!r}"
        )
    scheme = CLUSTER_SCHEMES[parts.scheme.lower()]
    netloc = f"{userinfo}{at}{hosts.split(',')[0].strip()}"
    return urlunsplit(parts._replace(scheme=scheme, netloc=netloc, path=""))


def with_db(url: str, db: int | None) -> str:
    """Put ``db`` in the URL path, where redis-py looks first (``None``: leave it)."""
    if db is None:
        return url
    return urlunsplit(split_url(url)._replace(path=f"/{db}"))


class RedisOptions(BaseModel):
    """chatmem's options for the Redis repository, in the URL query or as keywords."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key_prefix: str = "chatmem"
    """Prefix of every key; lets several apps share one database. No ``:``, braces or
    control characters, so no two (prefix, conversation id) pairs share a key."""
    ttl: Duration | None = None
    """Expire a conversation (all its keys and its index entries) this long after its last
    append. ``None`` keeps conversations forever."""
    db: NonNegativeInt | None = None
    """Database number; overrides the one in the URL path."""
    connect_timeout: Duration = timedelta(seconds=5)
    """How long to wait for a connection before raising ``RepositoryConnectionError``."""
    read_timeout: Duration = timedelta(seconds=5)
    """How long to wait for a reply before raising ``RepositoryTimeoutError``."""
    retries: NonNegativeInt = 1
    """Retries after a connection error or timeout (safe: every write is idempotent)."""
    history_scan_budget: PositiveInt = 5000
    """Most messages one ``find_history`` round trip examines when filtering by text or by
    several criteria; longer scans continue in further round trips."""
    cluster_buckets: PositiveInt = 64
    """Redis Cluster only: how many hash-tag groups the conversation index is split into (each
    bucket is one slot, holding its conversations and their index). Every client of one
    ``key_prefix`` must use the same number: it decides where a conversation's keys live."""

    @field_validator("key_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        return check_key_prefix(value)

    def client_kwargs(self) -> dict[str, Any]:
        """Arguments for ``Redis.from_url`` that come from chatmem's options."""
        return {
            "socket_timeout": self.read_timeout.total_seconds(),
            "socket_connect_timeout": self.connect_timeout.total_seconds(),
            "decode_responses": False,
        }


def parse_url(url: str, keyword_options: dict[str, Any]) -> ParsedUrl[RedisOptions]:
    """Apply the URL option rule to a Redis URL and keyword options.

    ``redis://`` and ``rediss://`` name one server; ``redis+cluster://`` and
    ``rediss+cluster://`` name seed nodes of a Redis Cluster (see :func:`cluster_seeds`).

    Returns:
        The URL for redis-py (declared driver parameters kept, ``db`` applied to the path; for
        a cluster, a ``redis://`` URL of its first seed node), chatmem's options, and the
        driver's keyword arguments.

    Raises:
        ConfigurationError: For an unknown option (with did-you-mean), a bad value, a
            malformed port or IPv6 address, several hosts in a single-server URL, a database
            other than 0 for a cluster, or ``cluster_buckets`` without a cluster.
    """
    parsed = parse_url_options(
        RedisOptions,
        url,
        keyword_options,
        backend=BACKEND,
        driver_parameters=DRIVER_PARAMETERS,
    )
    if is_cluster_url(parsed.url):
        if parsed.options.db not in (None, 0):
            raise ConfigurationError(
                f"Redis Cluster has only database 0, got db={parsed.options.db}"
            )
        cluster_seeds(parsed.url)  # checks every seed
        base = _first_node_url(parsed.url)
    else:
        if "cluster_buckets" in parsed.options.model_fields_set:
            raise ConfigurationError(
                "cluster_buckets applies to Redis Cluster only: use a redis+cluster:// URL"
            )
        base = with_db(check_server_url(parsed.url), parsed.options.db)
    tls_only = sorted(
        name
        for name in (*parsed.url_driver_parameters, *parsed.driver_options)
        if name.startswith("ssl_")
    )
    if tls_only and split_url(base).scheme.lower() != "rediss":
        # redis-py would accept them here and fail at the first command with a TypeError.
        raise ConfigurationError(
            f"{', '.join(tls_only)} only apply to TLS connections: use a rediss:// URL"
        )
    return ParsedUrl(base, parsed.options, parsed.driver_options, parsed.url_driver_parameters)

"""Options of the Redis repository and how a URL becomes a redis-py client (no I/O).

The URL option rule (see :func:`~chatmem.backend.parse_url_options`): a query
parameter is one of :class:`RedisOptions` or one of :data:`DRIVER_PARAMETERS`, which stay in
the URL for redis-py to read; any other redis-py argument goes in ``driver_options={...}``.

A ``redis+cluster://`` (or ``rediss+cluster://``) URL selects Redis Cluster: its comma-separated
``host:port`` seed nodes become redis-py ``RedisCluster`` startup nodes.

A ``redis+sentinel://`` (or ``rediss+sentinel://``) URL selects Redis Sentinel: its
comma-separated ``host:port`` pairs are sentinels, its path names the monitored service and
optionally the database (``/mymaster/0``); redis-py's ``Sentinel(...).master_for(...)`` makes
the client (see :func:`sentinel_settings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import unquote, urlunsplit

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, field_validator
from redis.connection import parse_url as redis_parse_url

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
    "SENTINEL_SCHEMES",
    "RedisOptions",
    "SentinelSettings",
    "check_server_url",
    "cluster_seeds",
    "is_cluster_url",
    "is_sentinel_url",
    "parse_url",
    "sentinel_settings",
    "with_db",
]

CLUSTER_SCHEMES: dict[str, str] = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""URL schemes that select Redis Cluster, and the scheme redis-py reads for each node."""

SENTINEL_SCHEMES: dict[str, str] = {"redis+sentinel": "redis", "rediss+sentinel": "rediss"}
"""URL schemes that select Redis Sentinel, and the scheme of the servers (``rediss``: TLS to
the sentinels and to the master)."""

SENTINEL_ONLY = ("sentinel_username", "sentinel_password", "sentinel_timeout")
"""Options that only a Sentinel URL takes."""

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
            "Cluster use redis+cluster://host:port,host:port; for Sentinel use "
            "redis+sentinel://sentinel:26379,sentinel:26379/service_name[/db]"
        )
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError as exc:
        raise ConfigurationError(f"bad port in Redis URL {redact_url(url)!r}: {exc}") from None
    return url


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` selects Redis Cluster (``redis+cluster://`` or ``rediss+cluster://``)."""
    return split_url(url).scheme.lower() in CLUSTER_SCHEMES


def is_sentinel_url(url: str) -> bool:
    """Whether ``url`` selects Redis Sentinel (``redis+sentinel://`` or ``rediss+sentinel://``)."""
    return split_url(url).scheme.lower() in SENTINEL_SCHEMES


def cluster_seeds(url: str) -> list[tuple[str, int]]:
    """The seed nodes of a ``redis+cluster://h1:p1,h2:p2`` URL, as (host, port) pairs.

    A port left out is 6379. ``[::1]:7000`` names an IPv6 node.

    Raises:
        ConfigurationError: For an empty host or a malformed port.
    """
    return _hosts(url, "Redis Cluster", "seed nodes", 6379)


def _hosts(url: str, kind: str, what: str, default_port: int) -> list[tuple[str, int]]:
    hosts = split_url(url).netloc.rpartition("@")[2]
    found = []
    for host in hosts.split(","):
        node = split_url(f"//{host.strip()}")
        try:
            port = node.port or default_port
        except ValueError as exc:
            raise ConfigurationError(f"bad port in {kind} URL {redact_url(url)!r}: {exc}") from None
        if not node.hostname:
            raise ConfigurationError(
                f"a {kind} URL lists {what} as host:port,host:port; got an empty "
                f"one in {redact_url(url)!r}"
            )
        found.append((node.hostname, port))
    return found


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
    wait_replicas: NonNegativeInt = 0
    """After each write, wait (Redis ``WAIT``, on the write's connection, in the same round
    trip) until this many replicas have it; fewer within ``wait_timeout_ms`` raises
    ``RepositoryOutcomeUnknownError`` (the write is on the master but a failover may lose it).
    0: do not wait. Not for Redis Cluster."""
    wait_timeout_ms: PositiveInt = 1000
    """How long ``wait_replicas`` waits for the replicas, in milliseconds."""
    sentinel_username: str | None = None
    """Redis Sentinel only: the user name for the sentinels (the URL's user info is the
    servers')."""
    sentinel_password: str | None = None
    """Redis Sentinel only: the password for the sentinels."""
    sentinel_timeout: Duration = timedelta(seconds=2)
    """Redis Sentinel only: connect and read timeout of each sentinel query; a sentinel that
    does not answer in time is skipped for the next one."""
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


@dataclass(frozen=True)
class SentinelSettings:
    """What redis-py's ``Sentinel`` and ``master_for`` take for a ``redis+sentinel://`` URL."""

    sentinels: list[tuple[str, int]]
    """The sentinels, as (host, port) pairs (a port left out is 26379)."""
    service_name: str
    """The name the sentinels monitor the master under."""
    sentinel_kwargs: dict[str, Any]
    """Connection arguments of the sentinel connections (timeouts, credentials, TLS)."""
    server_kwargs: dict[str, Any]
    """Connection arguments of the master's connections (db, credentials, TLS, driver
    parameters), without chatmem's timeouts."""


def _sentinel_path(url: str, db: int | None) -> tuple[str, int]:
    """The service name and the database of a Sentinel URL's path ``/service[/db]``."""
    path = split_url(url).path.strip("/")
    service, _, db_text = (unquote(part) for part in path.partition("/"))
    if not service:
        raise ConfigurationError(
            f"a Redis Sentinel URL names the monitored service in its path, as in "
            f"redis+sentinel://host:26379,host:26379/mymaster/0; got none in {redact_url(url)!r}"
        )
    if db_text and not (db_text.isascii() and db_text.isdigit()):
        raise ConfigurationError(
            f"bad database {db_text!r} in Redis Sentinel URL {redact_url(url)!r}: the path is "
            "/service_name or /service_name/<db number>"
        )
    return service, db if db is not None else int(db_text or 0)


def sentinel_settings(parsed: ParsedUrl[RedisOptions]) -> SentinelSettings:
    """Read a parsed ``redis+sentinel://`` URL into redis-py's Sentinel arguments.

    The URL's user info and driver parameters apply to the master's connections, as in a
    ``redis://`` URL (redis-py reads them: ``redis.connection.parse_url``);
    ``sentinel_username``, ``sentinel_password`` and ``sentinel_timeout`` to the sentinels'.
    ``rediss+sentinel://`` uses TLS to both, with the same ``ssl_*`` parameters.

    Raises:
        ConfigurationError: For no service name, a bad database, an empty host or a bad port.
    """
    url, options = parsed.url, parsed.options
    parts = split_url(url)
    service, db = _sentinel_path(url, options.db)
    tls = SENTINEL_SCHEMES[parts.scheme.lower()] == "rediss"
    userinfo, at, _ = parts.netloc.rpartition("@")
    # redis-py's own reading of a Redis URL's credentials and query, on a stand-in host.
    plain = urlunsplit(
        parts._replace(scheme="rediss" if tls else "redis", netloc=f"{userinfo}{at}h", path="")
    )
    server_kwargs = redis_parse_url(plain)  # type: ignore[no-untyped-call]
    for name in ("host", "port", "path", "connection_class"):
        server_kwargs.pop(name, None)
    server_kwargs["db"] = db
    ssl_kwargs = {k: v for k, v in server_kwargs.items() if k.startswith("ssl_")}
    if tls:
        server_kwargs["ssl"] = True
    timeout = options.sentinel_timeout.total_seconds()
    sentinel_kwargs: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        **({"ssl": True, **ssl_kwargs} if tls else {}),
    }
    if options.sentinel_username is not None:
        sentinel_kwargs["username"] = options.sentinel_username
    if options.sentinel_password is not None:
        sentinel_kwargs["password"] = options.sentinel_password
    return SentinelSettings(
        _hosts(url, "Redis Sentinel", "sentinels", 26379), service, sentinel_kwargs, server_kwargs
    )


def parse_url(url: str, keyword_options: dict[str, Any]) -> ParsedUrl[RedisOptions]:
    """Apply the URL option rule to a Redis URL and keyword options.

    ``redis://`` and ``rediss://`` name one server; ``redis+cluster://`` and
    ``rediss+cluster://`` name seed nodes of a Redis Cluster (see :func:`cluster_seeds`);
    ``redis+sentinel://`` and ``rediss+sentinel://`` name sentinels and a service (see
    :func:`sentinel_settings`).

    Returns:
        The URL for redis-py (declared driver parameters kept, ``db`` applied to the path; for
        a cluster, a ``redis://`` URL of its first seed node; for Sentinel, the URL as given),
        chatmem's options, and the driver's keyword arguments.

    Raises:
        ConfigurationError: For an unknown option (with did-you-mean), a bad value, a
            malformed port or IPv6 address, several hosts in a single-server URL, a database
            other than 0 for a cluster, ``cluster_buckets`` or ``wait_replicas`` with a
            cluster URL mixed up, Sentinel options without a Sentinel URL, or a Sentinel URL
            without its service name.
    """
    parsed = parse_url_options(
        RedisOptions,
        url,
        keyword_options,
        backend=BACKEND,
        driver_parameters=DRIVER_PARAMETERS,
    )
    given = parsed.options.model_fields_set
    sentinel_only = sorted(given & set(SENTINEL_ONLY))
    if sentinel_only and not is_sentinel_url(parsed.url):
        raise ConfigurationError(
            f"{', '.join(sentinel_only)} apply to Redis Sentinel only: use a "
            "redis+sentinel://host:port,host:port/service_name URL"
        )
    if is_sentinel_url(parsed.url):
        if "cluster_buckets" in given:
            raise ConfigurationError(
                "cluster_buckets applies to Redis Cluster, not to Redis Sentinel: a Sentinel "
                "service is one master and its replicas"
            )
        sentinel_settings(parsed)  # checks the sentinels, the service name and the database
        base = parsed.url
    elif is_cluster_url(parsed.url):
        if "wait_replicas" in given:
            raise ConfigurationError(
                "wait_replicas applies to one server or a Redis Sentinel service, not to Redis "
                "Cluster (its WAIT covers one node)"
            )
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
    if (
        tls_only
        and SENTINEL_SCHEMES.get(split_url(base).scheme.lower(), split_url(base).scheme.lower())
        != "rediss"
    ):
        # redis-py would accept them here and fail at the first command with a TypeError.
        raise ConfigurationError(
            f"{', '.join(tls_only)} only apply to TLS connections: use a rediss:// (or "
            "rediss+sentinel://, rediss+cluster://) URL"
        )
    return ParsedUrl(base, parsed.options, parsed.driver_options, parsed.url_driver_parameters)

"""Options of the Redis repository and how they become redis-py client arguments (no I/O)."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
)

from chatmem.exceptions import ConfigurationError
from chatmem_repositories._options import Duration, redact_url, split_url
from chatmem_repositories.redis._keys import check_key_prefix

__all__ = ["RedisOptions", "check_server_url", "with_db"]


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
            f"a Redis URL names one server, got several in {redact_url(url)!r}; for Sentinel, "
            "pass Sentinel(...).master_for(...) as the repository's client"
        )
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError as exc:
        raise ConfigurationError(f"bad port in Redis URL {redact_url(url)!r}: {exc}") from None
    return url


def with_db(url: str, db: int | None) -> str:
    """Put ``db`` in the URL path, where redis-py looks first (``None``: leave it)."""
    if db is None:
        return url
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


class RedisOptions(BaseModel):
    """Options accepted in a ``redis://`` / ``rediss://`` URL query or as keywords."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key_prefix: str = "chatmem"
    """Prefix of every key; lets several apps share one database. No ``:``, braces or
    control characters, so no two (prefix, conversation id) pairs share a key."""
    ttl: Duration | None = None
    """Expire a conversation (all its keys and its index entries) this long after its last
    append. ``None`` keeps conversations forever."""
    db: NonNegativeInt | None = None
    """Database number; overrides the one in the URL path."""
    socket_timeout: PositiveFloat = 5.0
    """Seconds to wait for a reply before raising ``RepositoryTimeoutError``."""
    socket_connect_timeout: PositiveFloat = 5.0
    """Seconds to wait for a connection before raising ``RepositoryConnectionError``."""
    retries: NonNegativeInt = 1
    """Retries after a connection error or timeout (safe: every write is idempotent)."""
    max_connections: PositiveInt | None = None
    """Size limit of the connection pool (unbounded by default, as in redis-py)."""
    health_check_interval: NonNegativeInt = 0
    """Seconds after which an idle connection is pinged before use (0: never)."""
    client_name: str | None = None
    """Name shown by ``CLIENT LIST``."""
    ssl_cert_reqs: Literal["none", "optional", "required"] | None = None
    """Certificate check for ``rediss://``."""
    ssl_ca_certs: str | None = None
    """CA bundle file for ``rediss://``."""
    history_scan_budget: PositiveInt = 5000
    """Most messages one ``find_history`` round trip examines when filtering by text or by
    several criteria; longer scans continue in further round trips."""

    @field_validator("key_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        return check_key_prefix(value)

    def client_kwargs(self) -> dict[str, Any]:
        """Arguments for ``Redis.from_url`` (retry policy excluded)."""
        kwargs: dict[str, Any] = {
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.socket_connect_timeout,
            "health_check_interval": self.health_check_interval,
            "decode_responses": False,
        }
        optional = {
            "max_connections": self.max_connections,
            "client_name": self.client_name,
            "ssl_cert_reqs": self.ssl_cert_reqs,
            "ssl_ca_certs": self.ssl_ca_certs,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        return kwargs

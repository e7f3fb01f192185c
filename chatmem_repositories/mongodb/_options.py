"""Options of the MongoDB repository and how a URL is split between chatmem and pymongo.

The URL option rule (see :func:`~chatmem.backend.parse_url_options`): a query
parameter of a ``mongodb://`` URL is one of chatmem's options (:class:`MongoOptions`) or one
of the connection-string options in :data:`DRIVER_PARAMETERS` (``replicaSet``, ``authSource``,
``tls``..., in any case, as MongoDB reads them), which stay in the URL for pymongo. Anything
else is an error naming it; other ``MongoClient`` arguments go in ``driver_options={...}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote_plus, urlunsplit

from pydantic import BaseModel, ConfigDict, field_validator
from pymongo import uri_parser
from pymongo.errors import ConfigurationError as PyMongoConfigurationError

from chatmem.backend import (
    Duration,
    InitializeSchema,
    parse_url_options,
    redact_url,
    scrub,
    split_url,
)
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.mongodb._errors import BACKEND, SENT_COMMANDS

__all__ = ["DRIVER_PARAMETERS", "ClientSettings", "MongoOptions", "parse_url"]

# Checked with fullmatch: "^...$" with match would accept a trailing newline.
_COLLECTION_PREFIX = re.compile(r"[A-Za-z0-9_.-]{0,64}")
_DATABASE = re.compile(r"[^/\\. \"$\x00-\x1f\x7f]{1,63}")
_SRV_ONLY = ("srvmaxhosts", "srvservicename")

DRIVER_PARAMETERS: tuple[str, ...] = (
    "appName",
    "authMechanism",
    "authMechanismProperties",
    "authSource",
    "compressors",
    "connectTimeoutMS",
    "directConnection",
    "heartbeatFrequencyMS",
    "journal",
    "loadBalanced",
    "localThresholdMS",
    "maxConnecting",
    "maxIdleTimeMS",
    "maxPoolSize",
    "maxStalenessSeconds",
    "minPoolSize",
    "readConcernLevel",
    "readPreference",
    "readPreferenceTags",
    "replicaSet",
    "retryReads",
    "retryWrites",
    "serverMonitoringMode",
    "serverSelectionTimeoutMS",
    "socketTimeoutMS",
    "srvMaxHosts",
    "srvServiceName",
    "ssl",
    "timeoutMS",
    "tls",
    "tlsAllowInvalidCertificates",
    "tlsAllowInvalidHostnames",
    "tlsCAFile",
    "tlsCertificateKeyFile",
    "tlsCertificateKeyFilePassword",
    "tlsCRLFile",
    "tlsDisableOCSPEndpointCheck",
    "tlsInsecure",
    "uuidRepresentation",
    "w",
    "waitQueueTimeoutMS",
    "wTimeoutMS",
    "zlibCompressionLevel",
)
"""The MongoDB connection-string options a URL may carry (matched in any case); pymongo reads
them. The three timeouts among them override ``connect_timeout``/``read_timeout`` unless those
are given too."""

_CONNECT = ("connectTimeoutMS", "serverSelectionTimeoutMS")
_READ = ("socketTimeoutMS",)


class MongoOptions(BaseModel):
    """chatmem's options for the MongoDB repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database: str | None = None
    """Database name; defaults to the URL's path, then ``chatmem``."""
    collection_prefix: str = "chatmem_"
    """Prefix of the two collections (``<prefix>messages``, ``<prefix>conversations``): up
    to 64 ASCII letters, digits, ``_``, ``.`` or ``-``, not starting with ``system.``."""
    ttl: Duration | None = None
    """Expire a conversation this long after its last write."""
    initialize_schema: InitializeSchema = "always"
    """``"always"``: create the indexes on first use (they are required); ``"never"``: they
    are made elsewhere."""
    connect_timeout: Duration = timedelta(seconds=5)
    """How long to wait to select a server and to connect (``serverSelectionTimeoutMS`` and
    ``connectTimeoutMS``), so a server that is down gives an error in seconds."""
    read_timeout: Duration = timedelta(seconds=10)
    """How long to wait for a reply (``socketTimeoutMS``)."""
    clock: Callable[[], datetime] | None = None
    """Returns the current time (aware UTC) for the stored expiry; keyword only."""

    @field_validator("database")
    @classmethod
    def _check_database(cls, value: str | None) -> str | None:
        if value is not None:
            check_database(value)
        return value

    @field_validator("collection_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        # Each prefix names its own two collections: the fixed suffixes differ, so two
        # different prefixes can never name the same collection.
        if not _COLLECTION_PREFIX.fullmatch(value) or value.startswith("system."):
            raise ValueError(
                "must be at most 64 ASCII letters, digits, '_', '.' or '-', not starting "
                "with 'system.' (reserved by MongoDB)"
            )
        return value


def check_database(name: str) -> str:
    """Return ``name`` if MongoDB accepts it as a database name, else raise.

    Raises:
        ConfigurationError: If it is empty, longer than 63 characters or holds ``/``, a
            backslash, ``.``, a space, ``"``, ``$`` or a control character (a line break
            included).
    """
    if not _DATABASE.fullmatch(name):
        raise ConfigurationError(f"invalid MongoDB database name {name!r}")
    return name


@dataclass(frozen=True)
class ClientSettings:
    """What :func:`parse_url` found: how to build the client and the repository."""

    url: str
    """URL for pymongo, without chatmem's options."""
    client_options: dict[str, Any]
    """Keyword options for the pymongo client (timeouts included)."""
    options: MongoOptions
    """chatmem's options."""
    database: str
    """Database the repository uses."""
    redacted_url: str
    """The URL with its password hidden, for reprs and errors."""


def _hosts(base: str) -> list[str]:
    netloc = split_url(base).netloc
    return netloc.rpartition("@")[2].split(",")


def _validation_url(base: str, url_theirs: str) -> str:
    """The URL pymongo can check without I/O: SRV becomes plain, its own options go."""
    scheme, _, rest = base.partition("://")
    if scheme.lower() != "mongodb+srv":
        return base + ("?" + url_theirs if url_theirs else "")
    hosts = _hosts(base)
    if len(hosts) != 1 or not hosts[0]:
        raise ConfigurationError(
            "a mongodb+srv:// URL names exactly one host, the DNS name whose SRV records list "
            f"the servers; got {', '.join(hosts)!r} (list several hosts with mongodb://)"
        )
    if hosts[0].rpartition("]")[2].count(":"):
        raise ConfigurationError(
            f"a mongodb+srv:// URL takes no port (DNS gives the ports); got {hosts[0]!r}"
        )
    kept = [
        piece
        for piece in filter(None, re.split(r"[&;]", url_theirs))
        if piece.partition("=")[0].lower() not in _SRV_ONLY
    ]
    return "mongodb://" + rest + ("?" + "&".join(kept) if kept else "")


def _check_url(url: str, checked: str) -> None:
    # Validates hosts, ports and option values without connecting; SRV records are not
    # looked up, so a mongodb+srv:// URL is checked as the equivalent mongodb:// one.
    try:
        uri_parser.parse_uri(checked, validate=True, warn=False)
    except (PyMongoConfigurationError, ValueError) as exc:
        raise ConfigurationError(
            f"invalid MongoDB URL {redact_url(url)!r}: {scrub(str(exc), url)}"
        ) from None


def _timeouts(options: MongoOptions, given: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(defaults for timeouts the driver parameters leave unset, timeouts given explicitly).

    A chatmem timeout given explicitly wins over the same timeout given as a driver
    parameter (``connectTimeoutMS``...); its default yields to it, so both spellings work.
    """
    defaults: dict[str, Any] = {}
    explicit: dict[str, Any] = {}
    for names, field, value in (
        (_CONNECT, "connect_timeout", options.connect_timeout),
        (_READ, "read_timeout", options.read_timeout),
    ):
        for name in names:
            milliseconds = round(value.total_seconds() * 1000)
            if field in options.model_fields_set:
                explicit[name] = milliseconds
            elif name.lower() not in given:
                defaults[name] = milliseconds
    return defaults, explicit


def parse_url(url: str, keyword_options: Mapping[str, Any]) -> ClientSettings:
    """Split a ``mongodb://`` or ``mongodb+srv://`` URL and keyword options.

    Replica-set URLs (``mongodb://u:pw@h1:27017,h2:27017/db?replicaSet=rs``) and IPv6 hosts
    (``[::1]:27017``) are accepted; nothing is resolved or connected to here.

    Args:
        url: The repository URL.
        keyword_options: Keyword options; they win over the URL's.

    Raises:
        ConfigurationError: For an unknown option (naming it, with a suggestion), a bad value
            or a bad URL (a malformed port or IPv6 address, several hosts or a port in an SRV
            URL).
    """
    # MongoDB also separates options with ";"; pymongo reads "&" the same way.
    scheme_rest = split_url(url)
    normalized = url
    if ";" in scheme_rest.query:
        normalized = url.replace(scheme_rest.query, scheme_rest.query.replace(";", "&"), 1)
    parsed = parse_url_options(
        MongoOptions,
        normalized,
        keyword_options,
        backend=BACKEND,
        driver_parameters=DRIVER_PARAMETERS,
        driver_case_sensitive=False,
    )
    options = parsed.options
    parts = split_url(parsed.url)
    url_theirs = parts.query
    base = urlunsplit(parts._replace(query=""))
    given = {name.lower() for name in parsed.url_driver_parameters}
    given |= {name.lower() for name in parsed.driver_options}
    defaults, explicit = _timeouts(options, given)
    # Keyword driver arguments win over the URL's, as in pymongo.
    overridden = {name.lower() for name in explicit}
    theirs = {k: v for k, v in parsed.driver_options.items() if k.lower() not in overridden}
    client_options: dict[str, Any] = {**defaults, **theirs, **explicit}
    # The repository's listener tells a write that failed before sending anything from one
    # that may have been applied; listeners given as an option are kept.
    listeners = list(client_options.get("event_listeners") or ())
    client_options["event_listeners"] = [SENT_COMMANDS, *listeners]
    _check_url(url, _validation_url(base, url_theirs))
    database = check_database(options.database or unquote_plus(parts.path.lstrip("/")) or "chatmem")
    return ClientSettings(parsed.url, client_options, options, database, redact_url(url))

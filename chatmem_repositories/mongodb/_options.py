"""Options of the MongoDB repository and how a URL is split between chatmem and pymongo.

A ``mongodb://`` URL carries both kinds of option in one query string: chatmem's own
(``database``, ``collection_prefix``, ``ttl``, ``create_indexes``) and pymongo's
(``serverSelectionTimeoutMS``, ``tls``, ``replicaSet``...). Ours are taken out and validated
here; the rest go to the client. A name that is neither is an error naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlunsplit

from pydantic import BaseModel, ConfigDict, field_validator
from pymongo import common, uri_parser
from pymongo.errors import ConfigurationError as PyMongoConfigurationError

from chatmem._urls import scrub
from chatmem.exceptions import ConfigurationError
from chatmem_repositories._options import (
    Duration,
    did_you_mean,
    parse_options,
    redact_url,
    split_query,
    split_url,
)
from chatmem_repositories.mongodb._errors import SENT_COMMANDS

__all__ = ["DEFAULT_TIMEOUTS_MS", "ClientSettings", "MongoOptions", "parse_url"]

# Checked with fullmatch: "^...$" with match would accept a trailing newline.
_COLLECTION_PREFIX = re.compile(r"[A-Za-z0-9_.-]{0,64}")
_DATABASE = re.compile(r"[^/\\. \"$\x00-\x1f\x7f]{1,63}")
_SRV_ONLY = ("srvmaxhosts", "srvservicename")

DEFAULT_TIMEOUTS_MS: dict[str, int] = {
    "serverSelectionTimeoutMS": 5_000,
    "connectTimeoutMS": 5_000,
    "socketTimeoutMS": 10_000,
}
"""Bounded defaults, so a server that is down gives an error in seconds, never a hang."""


class MongoOptions(BaseModel):
    """chatmem's own options for the MongoDB repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database: str | None = None
    """Database name; defaults to the URL's path, then ``chatmem``."""
    collection_prefix: str = "chatmem_"
    """Prefix of the two collections (``<prefix>messages``, ``<prefix>conversations``): up
    to 64 ASCII letters, digits, ``_``, ``.`` or ``-``, not starting with ``system.``."""
    ttl: Duration | None = None
    """Expire a conversation this long after its last write."""
    create_indexes: bool = True
    """Create the indexes on first use (they are required; turn off only if made elsewhere)."""

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


def _is_pymongo_option(name: str) -> bool:
    return name.lower() in common.VALIDATORS or name.lower() in common.URI_OPTIONS_ALIAS_MAP


def _unknown(name: str) -> ConfigurationError:
    known = set(MongoOptions.model_fields) | set(common.VALIDATORS)
    return ConfigurationError(
        f"unknown option {name!r} for the mongodb repository{did_you_mean(name.lower(), known)}"
        f"; chatmem options: {', '.join(sorted(MongoOptions.model_fields))}, "
        "or any pymongo client option"
    )


def _split(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    for name, value in options.items():
        if name in MongoOptions.model_fields:
            ours[name] = value
        elif _is_pymongo_option(name):
            theirs[name] = value
        else:
            raise _unknown(name)
    return ours, theirs


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


def parse_url(url: str, keyword_options: Mapping[str, Any]) -> ClientSettings:
    """Split a ``mongodb://`` or ``mongodb+srv://`` URL and keyword options.

    Replica-set URLs (``mongodb://u:pw@h1:27017,h2:27017/db?replicaSet=rs``) and IPv6 hosts
    (``[::1]:27017``) are accepted; nothing is resolved or connected to here.

    Args:
        url: The repository URL.
        keyword_options: Keyword options; they win over the URL's.

    Raises:
        ConfigurationError: For an unknown option (naming it), a bad value or a bad URL
            (a malformed port or IPv6 address, several hosts or a port in an SRV URL).
    """
    base, url_ours = split_query(url, only=MongoOptions.model_fields)
    parts = split_url(base)
    url_theirs = parts.query
    base = urlunsplit(parts._replace(query=""))
    for name, _ in parse_qsl(url_theirs.replace(";", "&"), keep_blank_values=True):
        if not _is_pymongo_option(name):
            raise _unknown(name)
    kw_ours, kw_theirs = _split(keyword_options)
    options = parse_options(MongoOptions, url_ours, kw_ours, backend="mongodb")
    client_url = base + ("?" + url_theirs if url_theirs else "")
    given = {name.lower() for name, _ in parse_qsl(url_theirs.replace(";", "&"))}
    given |= {name.lower() for name in kw_theirs}
    client_options: dict[str, Any] = {
        k: v for k, v in DEFAULT_TIMEOUTS_MS.items() if k.lower() not in given
    }
    client_options.update(kw_theirs)
    # The repository's listener tells a write that failed before sending anything from one
    # that may have been applied; listeners given as an option are kept.
    listeners = list(client_options.get("event_listeners") or ())
    client_options["event_listeners"] = [SENT_COMMANDS, *listeners]
    _check_url(url, _validation_url(base, url_theirs))
    database = check_database(options.database or unquote_plus(parts.path.lstrip("/")) or "chatmem")
    return ClientSettings(client_url, client_options, options, database, redact_url(url))

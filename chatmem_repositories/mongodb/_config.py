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
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pymongo import common, uri_parser
from pymongo.errors import ConfigurationError as PyMongoConfigurationError

from chatmem.exceptions import ConfigurationError
from chatmem_repositories._options import (
    Duration,
    did_you_mean,
    parse_options,
    redact_url,
    split_query,
)

__all__ = ["DEFAULT_TIMEOUTS_MS", "ClientSettings", "MongoOptions", "parse_url"]

_COLLECTION_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{0,64}$")
_DATABASE = re.compile(r"^[^/\\. \"$\x00]{1,63}$")

DEFAULT_TIMEOUTS_MS: dict[str, int] = {
    "serverSelectionTimeoutMS": 5_000,
    "connectTimeoutMS": 5_000,
    "socketTimeoutMS": 10_000,
}
"""Bounded defaults, so a server that is down gives an error in seconds, never a hang."""


class MongoOptions(BaseModel):
    """chatmem's own options for the MongoDB repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database: str | None = Field(default=None, pattern=_DATABASE.pattern)
    """Database name; defaults to the URL's path, then ``chatmem``."""
    collection_prefix: str = "chatmem_"
    """Prefix of the two collections (``<prefix>messages``, ``<prefix>conversations``): up
    to 64 ASCII letters, digits, ``_``, ``.`` or ``-``, not starting with ``system.``."""
    ttl: Duration | None = None
    """Expire a conversation this long after its last write."""
    create_indexes: bool = True
    """Create the indexes on first use (they are required; turn off only if made elsewhere)."""

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


def parse_url(url: str, keyword_options: Mapping[str, Any]) -> ClientSettings:
    """Split a ``mongodb://`` or ``mongodb+srv://`` URL and keyword options.

    Args:
        url: The repository URL.
        keyword_options: Keyword options; they win over the URL's.

    Raises:
        ConfigurationError: For an unknown option (naming it), a bad value or a bad URL.
    """
    redacted = redact_url(url)
    base, query = split_query(url)
    url_ours, url_theirs = _split(query)
    kw_ours, kw_theirs = _split(keyword_options)
    options = parse_options(MongoOptions, url_ours, kw_ours, backend="mongodb")
    client_url = base + ("?" + urlencode(url_theirs) if url_theirs else "")
    given = {name.lower() for name in (*url_theirs, *kw_theirs)}
    client_options = {k: v for k, v in DEFAULT_TIMEOUTS_MS.items() if k.lower() not in given}
    client_options.update(kw_theirs)
    if urlsplit(base).scheme.lower() == "mongodb":
        # Validates hosts and option values without connecting (mongodb+srv would need DNS).
        try:
            uri_parser.parse_uri(client_url, validate=True, warn=False)
        except PyMongoConfigurationError as exc:
            raise ConfigurationError(f"invalid MongoDB URL {redacted!r}: {exc}") from None
    database = options.database or urlsplit(base).path.lstrip("/") or "chatmem"
    if not _DATABASE.match(database):
        raise ConfigurationError(f"invalid MongoDB database name {database!r}")
    return ClientSettings(client_url, client_options, options, database, redacted)

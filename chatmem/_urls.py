"""Hiding the secrets a URL can carry, for every repr, error message and log line.

A URL carries credentials in two places: the user-info part (``user:password@``) and the
query string (``?password=...``, ``?api_key=...``, ``?tlsCertificateKeyFilePassword=...``).
:func:`redact_url` replaces both with ``***`` without parsing hosts or ports, so multi-host
(``h1:27017,h2:27017``), IPv6 (``[::1]:6379``) and malformed URLs are redacted too. User
names are kept: they say which account is used and are not secrets.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

__all__ = ["MASK", "is_secret_option", "redact_url", "scrub", "url_secrets"]

MASK = "***"
"""What a secret is replaced with."""

# Option names are compared lower-cased with "-", "_" and "." removed, so "api-key",
# "API_KEY" and "apiKey" are one name. A name is secret if it contains one of these...
_SECRET_PARTS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "authmechanismproperties",  # MongoDB: may hold AWS_SESSION_TOKEN:<token>
)
# ...or is one of these whole names.
_SECRET_NAMES = frozenset({"pass", "key", "sig", "signature", "auth", "authorization"})
# SQLAlchemy's reading of user-info: a user without ":" or "/", then ":" and a password
# that runs to the next "@" (it may hold "/", "?" or "#", which other parsers stop at).
_LOOSE_USERINFO = re.compile(r"([^:/?#@]*):([^@]*)@")
# Shorter credentials are not searched for in free text: replacing every "a" would make a
# driver's message unreadable. redact_url hides them whatever their length.
_MIN_SCRUBBED = 3


def is_secret_option(name: str) -> bool:
    """Tell whether a URL query option, by its name, carries a credential.

    Args:
        name: The option name, in any case and spelling (``api-key``, ``apiKey``).
    """
    key = re.sub(r"[-_.]", "", name.lower())
    return key in _SECRET_NAMES or any(part in key for part in _SECRET_PARTS)


def _split_userinfo(rest: str) -> tuple[str, str] | None:
    """Split ``rest`` (the URL after ``scheme://``) into (user-info, remainder)."""
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        userinfo, _, _ = authority.rpartition("@")
        return userinfo, rest[len(userinfo) + 1 :]
    loose = _LOOSE_USERINFO.match(rest)
    if loose:
        return rest[: loose.end() - 1], rest[loose.end() :]
    return None


def _redact_query(query: str) -> str:
    # pymongo also accepts ";" between options; both separators are kept as they were.
    pieces = re.split(r"([&;])", query)
    for index in range(0, len(pieces), 2):
        name, sep, _ = pieces[index].partition("=")
        if sep and is_secret_option(unquote_plus(name)):
            pieces[index] = f"{name}={MASK}"
    return "".join(pieces)


def _redact_tail(text: str) -> str:
    """Redact the query string of ``text``: the URL from its host(s) on."""
    query_at = text.find("?")
    if query_at < 0 or "#" in text[:query_at]:
        return text
    query, hash_mark, fragment = text[query_at + 1 :].partition("#")
    return f"{text[: query_at + 1]}{_redact_query(query)}{hash_mark}{fragment}"


def redact_url(url: object) -> str:
    """Return ``url`` with every credential it carries replaced by ``***``.

    The password in the user-info part and the value of every password-like query option
    (see :func:`is_secret_option`) are hidden; hosts, ports, paths and other options are
    kept as written. Nothing is parsed strictly, so a malformed URL is redacted too.

    Example:
        ```python
        redact_url("mongodb://app:pw@h1:27017,h2:27017/db?replicaSet=rs&token=t")
        # 'mongodb://app:***@h1:27017,h2:27017/db?replicaSet=rs&token=***'
        ```

    Args:
        url: The URL (anything else is turned into text first).
    """
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        # Not a URL (a typo such as "user:pw@host/db"): hide whatever precedes an "@".
        scheme, rest = "", text
    split = _split_userinfo(rest)
    if split is None:
        return f"{scheme}{sep}{_redact_tail(rest)}"
    userinfo, remainder = split
    user, colon, _ = userinfo.partition(":")
    hidden = f"{user}:{MASK}@" if sep and colon else f"{user}@" if sep else f"{MASK}@"
    return f"{scheme}{sep}{hidden}{_redact_tail(remainder)}"


def url_secrets(url: str) -> list[str]:
    """Return the credentials a URL carries, as written and percent-decoded.

    Used to scrub them from messages written by drivers, which may quote parts of the URL.

    Args:
        url: The URL.
    """
    found: set[str] = set()
    _, sep, rest = url.partition("://")
    split = _split_userinfo(rest if sep else url)
    tail = rest if sep else url
    if split is not None:
        userinfo, tail = split
        _, colon, password = userinfo.partition(":")
        if colon or not sep:
            found |= {password, unquote(password)} if colon else {userinfo, unquote(userinfo)}
    _, mark, query = tail.partition("?")
    if mark:
        for piece in re.split(r"[&;]", query.partition("#")[0]):
            name, eq, value = piece.partition("=")
            if eq and is_secret_option(unquote_plus(name)):
                found |= {value, unquote_plus(value)}
    # Longest first, so a secret that contains another is replaced whole.
    return sorted((s for s in found if len(s) >= _MIN_SCRUBBED), key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """Return ``text`` with every credential of ``url`` replaced by ``***``.

    Args:
        text: A message that may quote parts of the URL, such as a driver's error.
        url: The URL whose credentials must not appear.
    """
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text

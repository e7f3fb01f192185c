"""URL splitting and option parsing shared by every backend (no driver imports).

A backend declares its options as a frozen pydantic model with ``extra="forbid"``;
:func:`parse_options` merges the URL's query string with keyword options (keywords win),
validates them, and turns an unknown name into a :class:`~chatmem.ConfigurationError` that
names it and suggests the closest known one.

The URL option rule, the same for every backend, is :func:`parse_url_options`: each URL
query parameter (and each keyword option) is either one of chatmem's options for that
backend or one of the driver parameters the backend declares it passes through; anything
else is a ``ConfigurationError`` naming it, with a suggestion drawn from both lists. Any
other driver argument goes through the explicit ``driver_options={...}`` keyword.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, Generic, Literal, TypeVar
from urllib.parse import SplitResult, parse_qsl, urlsplit

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from chatmem._urls import redact_url, scrub
from chatmem.exceptions import ConfigurationError

__all__ = [
    "DRIVER_OPTIONS",
    "Duration",
    "InitializeSchema",
    "ParsedUrl",
    "did_you_mean",
    "parse_options",
    "parse_url_options",
    "split_query",
    "split_url",
]

OptionsT = TypeVar("OptionsT", bound=BaseModel)


def _seconds(value: object) -> object:
    # URL options arrive as text: "3600" or "1.5" mean seconds, like the numeric keyword form.
    if isinstance(value, str):
        try:
            return timedelta(seconds=float(value))
        except ValueError:
            return value  # let pydantic try ISO 8601 durations such as "PT1H"
    return value


Duration = Annotated[timedelta, BeforeValidator(_seconds), Field(gt=timedelta(0))]
"""A positive duration: a timedelta, seconds as a number, or seconds/ISO 8601 as text."""


InitializeSchema = Literal["always", "never"]
"""When a repository creates its schema (tables, indexes...): ``"always"`` on first use
(idempotent), ``"never"`` when it is made elsewhere. The SQL backend adds ``"embedded"``."""

DRIVER_OPTIONS = "driver_options"
"""The keyword that carries arbitrary driver arguments, on every backend."""

_LISTED = 12  # a longer list of driver parameters would drown the one-line error


@dataclass(frozen=True)
class ParsedUrl(Generic[OptionsT]):
    """What :func:`parse_url_options` found in a URL and the keyword options.

    Attributes:
        url: The URL without chatmem's options; the declared driver parameters stay in its
            query, as written, for the driver to read.
        options: chatmem's options, validated.
        driver_options: Keyword arguments for the driver: declared driver parameters given as
            keywords, then the ``driver_options`` mapping (which wins).
        url_driver_parameters: The declared driver parameters found in the URL, by the name
            written there.
    """

    url: str
    options: OptionsT
    driver_options: dict[str, Any] = field(default_factory=dict)
    url_driver_parameters: dict[str, str] = field(default_factory=dict)


def _unknown_option(
    name: str, model: type[BaseModel], driver_parameters: Collection[str], backend: str
) -> ConfigurationError:
    ours = sorted(model.model_fields)
    theirs = sorted(driver_parameters)
    passed = ""
    if len(theirs) > _LISTED:
        passed = f"; or one of its {len(theirs)} documented driver parameters"
    elif theirs:
        passed = f"; driver parameters passed through: {', '.join(theirs)}"
    return ConfigurationError(
        f"unknown option {name!r} for the {backend} repository"
        f"{did_you_mean(name, {*ours, *theirs, DRIVER_OPTIONS})}; chatmem options: "
        f"{', '.join(ours)}{passed}; other driver arguments go in {DRIVER_OPTIONS}={{...}}"
    )


def _split_keywords(
    keyword_options: Mapping[str, Any],
    ours: Collection[str],
    is_driver: Callable[[str], bool],
    unknown: Callable[[str], ConfigurationError],
) -> tuple[dict[str, Any], dict[str, Any]]:
    keyword_ours: dict[str, Any] = {}
    driver_options: dict[str, Any] = {}
    explicit: Any = None
    for name, value in keyword_options.items():
        if name == DRIVER_OPTIONS:
            explicit = value
        elif name in ours:
            keyword_ours[name] = value
        elif is_driver(name):
            driver_options[name] = value
        else:
            raise unknown(name)
    if explicit is not None:
        if not isinstance(explicit, Mapping) or not all(isinstance(k, str) for k in explicit):
            raise ConfigurationError(
                f"{DRIVER_OPTIONS} must be a mapping of argument names to values, "
                f"got {type(explicit).__name__}"
            )
        # Explicit driver arguments win over declared parameters given as keywords.
        driver_options.update(explicit)
    return keyword_ours, driver_options


def parse_url_options(
    model: type[OptionsT],
    url: str,
    keyword_options: Mapping[str, Any],
    *,
    backend: str,
    driver_parameters: Collection[str] = (),
    driver_case_sensitive: bool = True,
) -> ParsedUrl[OptionsT]:
    """Apply the URL option rule: chatmem options, declared driver parameters, nothing else.

    Every query parameter of ``url`` and every keyword option must be one of:

    - a field of ``model`` (chatmem's option; keywords win over the URL);
    - a name in ``driver_parameters``, documented as passed to the driver: it stays in the
      URL as written, or (as a keyword) goes into :attr:`ParsedUrl.driver_options`;
    - the keyword ``driver_options``, a mapping of arbitrary driver arguments.

    Example:
        ```python
        from pydantic import BaseModel, ConfigDict

        from chatmem.backend import parse_url_options


        class Options(BaseModel):
            model_config = ConfigDict(frozen=True, extra="forbid")
            ttl: float | None = None


        parsed = parse_url_options(
            Options, "store://h/db?ttl=60&tls=true", {}, backend="store", driver_parameters=["tls"]
        )
        assert parsed.url == "store://h/db?tls=true" and parsed.options.ttl == 60
        ```

    Args:
        model: The backend's frozen options model (``extra="forbid"``).
        url: The repository URL.
        keyword_options: Keyword options (typed values).
        backend: The backend's name, for messages.
        driver_parameters: The driver parameters the backend passes through.
        driver_case_sensitive: False where the driver reads its URL options in any case
            (MongoDB's connection string).

    Raises:
        ConfigurationError: For an unknown option (naming it, with a suggestion from both
            lists), an option given twice in the URL, a ``driver_options`` that is not a
            mapping of names, or a bad value.
    """
    fold: Callable[[str], str] = (lambda n: n) if driver_case_sensitive else str.lower
    passed = {fold(name) for name in driver_parameters}
    ours = set(model.model_fields)

    def is_driver(name: str) -> bool:
        return name not in ours and fold(name) in passed

    parts = split_url(url)
    url_ours: dict[str, str] = {}
    url_theirs: dict[str, str] = {}
    kept: list[str] = []
    for piece in filter(None, parts.query.split("&")):
        pairs = parse_qsl(piece, keep_blank_values=True) or [(piece, "")]
        name, value = pairs[0]
        if name in ours:
            if name in url_ours:
                raise ConfigurationError(f"option {name!r} is given twice in the URL")
            url_ours[name] = value
        elif is_driver(name):
            url_theirs[name] = value
            kept.append(piece)
        elif name == DRIVER_OPTIONS:
            raise ConfigurationError(
                f"{DRIVER_OPTIONS} is a keyword argument (a mapping), not a URL option"
            )
        else:
            raise _unknown_option(name, model, driver_parameters, backend)

    keyword_ours, driver_options = _split_keywords(
        keyword_options,
        ours,
        is_driver,
        lambda n: _unknown_option(n, model, driver_parameters, backend),
    )
    options = parse_options(model, url_ours, keyword_ours, backend=backend)
    base = _with_query(url, kept)
    return ParsedUrl(base, options, driver_options, url_theirs)


def did_you_mean(name: str, known: list[str] | tuple[str, ...] | set[str]) -> str:
    """Return ``' (did you mean 'x'?)'`` for the closest known name, or ``''``."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def split_url(url: str) -> SplitResult:
    """Split a URL into its parts, as :func:`urllib.parse.urlsplit` does, host lists included.

    A netloc may list several hosts (``u:pw@h1:7001,[::1]:7002,h3``: Redis Cluster seeds,
    a MongoDB replica set, PostgreSQL's libpq hosts, Cassandra contact points). Pythons with
    the fix for CVE-2025-0938 (recent patch releases, and backports such as Debian 12's
    3.11.2) read such a netloc as one host and refuse it when a bracketed IPv6 host follows
    another one. So each host of a list is checked on its own, the same way on every Python,
    and the result's netloc is the list as written: read the hosts from it (its
    ``hostname`` and ``port`` are those of no single host).

    Raises:
        ConfigurationError: If the URL or one of its hosts cannot be split (an unclosed IPv6
            bracket, text around a bracketed address, an IPv4 address in brackets), naming
            the URL with its credentials hidden.
    """
    try:
        found = _AUTHORITY.match(url)
        if found is None:
            return urlsplit(url)
        userinfo, at, hosts = found["netloc"].rpartition("@")
        checked = [_check_host(host) for host in hosts.split(",")]
        if len(checked) == 1:
            return urlsplit(url)
        start, end = found.span("netloc")
        parts = urlsplit(f"{url[:start]}{userinfo}{at}{_PLACEHOLDER}{url[end:]}")
        userinfo = parts.netloc.rpartition("@")[0]
        return parts._replace(netloc=f"{userinfo}{at}{','.join(checked)}")
    except ValueError as exc:
        # The message may quote a host: scrubbed in case a malformed URL put a secret there.
        raise ConfigurationError(
            f"malformed URL {redact_url(url)!r}: {scrub(str(exc), url)}"
        ) from None


# Where urlsplit finds a netloc: after an optional scheme (letters, digits, "+-." after a
# letter) and "//", up to the first "/", "?" or "#"; it skips leading spaces and controls.
_AUTHORITY = re.compile(r"[\x00-\x20]*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//(?P<netloc>[^/?#]*)")
# Stands in for a host list while urlsplit splits the rest of the URL.
_PLACEHOLDER = "hosts"


def _check_host(host: str) -> str:
    """Check one ``host[:port]`` of a netloc as urlsplit checks a netloc of it alone.

    Returns:
        The host as urlsplit keeps it (tabs and line breaks dropped).

    Raises:
        ValueError: For a malformed host; the message says what is wrong.
    """
    before, bracket, rest = host.partition("[")
    after = rest.partition("]")[2]
    # Pythons without the bracketed-host check accept text around the brackets, reading
    # "h[::1]x:5" as ::1; refuse it on every Python.
    if bracket and (before or (after and not after.startswith(":"))):
        raise ValueError(f"host {host!r}: an IPv6 address in brackets stands alone, as [::1]:port")
    try:
        return urlsplit(f"//{host}").netloc
    except ValueError as exc:
        raise ValueError(f"host {host!r}: {exc}") from None


def _with_query(url: str, pieces: list[str]) -> str:
    # Rebuilt by text, not urlunsplit: that drops the empty authority of "sqlite:///x.db"
    # (giving "sqlite:/x.db") and may re-quote what the user wrote.
    head, _, rest = url.partition("?")
    fragment = rest.partition("#")[2] if rest else head.partition("#")[2]
    head = head.partition("#")[0]
    query = "&".join(pieces)
    return head + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")


def split_query(url: str, *, only: Collection[str] | None = None) -> tuple[str, dict[str, str]]:
    """Split a URL into (URL without those options, query options).

    Args:
        url: The URL.
        only: Take out only these names; the rest of the query stays in the URL, as written,
            for the driver (which may accept a name several times, as libpq does ``host``).

    Raises:
        ConfigurationError: If an option taken out is given twice, or the URL is malformed.
    """
    parts = split_url(url)
    query: dict[str, str] = {}
    kept: list[str] = []
    for piece in filter(None, parts.query.split("&")):
        pairs = parse_qsl(piece, keep_blank_values=True)
        if only is not None and (not pairs or pairs[0][0] not in only):
            kept.append(piece)
            continue
        for key, value in pairs:
            if key in query:
                raise ConfigurationError(f"option {key!r} is given twice in the URL")
            query[key] = value
    return _with_query(url, kept), query


def parse_options(
    model: type[OptionsT],
    url_options: Mapping[str, Any],
    keyword_options: Mapping[str, Any],
    *,
    backend: str,
) -> OptionsT:
    """Merge URL and keyword options and validate them with ``model``.

    Args:
        model: The backend's frozen options model (``extra="forbid"``).
        url_options: Options from the URL query string (text values).
        keyword_options: Options passed as keywords (typed values); they win over the URL.
        backend: The backend's name, for messages.

    Raises:
        ConfigurationError: For an unknown option (naming it, with a suggestion) or a bad value.
    """
    merged = {**url_options, **keyword_options}
    known = set(model.model_fields)
    for name in merged:
        if name not in known:
            raise ConfigurationError(
                f"unknown option {name!r} for the {backend} repository"
                f"{did_you_mean(name, known)}; known options: {', '.join(sorted(known))}"
            )
    try:
        return model.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise ConfigurationError(
            f"invalid value for option {where!r} of the {backend} repository: {first['msg']}"
        ) from None

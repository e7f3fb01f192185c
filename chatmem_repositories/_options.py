"""URL and option handling shared by every backend (no driver imports).

A backend declares its options as a frozen pydantic model with ``extra="forbid"``;
:func:`parse_options` merges the URL's query string with keyword options (keywords win),
validates them, and turns an unknown name into a :class:`~chatmem.ConfigurationError` that
names it and suggests the closest known one.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Annotated, Any, TypeVar
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from chatmem._urls import redact_url
from chatmem.exceptions import ConfigurationError

__all__ = [
    "Duration",
    "did_you_mean",
    "parse_options",
    "redact_url",
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


def did_you_mean(name: str, known: list[str] | tuple[str, ...] | set[str]) -> str:
    """Return ``' (did you mean 'x'?)'`` for the closest known name, or ``''``."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def split_url(url: str) -> SplitResult:
    """Split a URL into its parts, as :func:`urllib.parse.urlsplit` does.

    Raises:
        ConfigurationError: If the URL cannot be split (an unclosed IPv6 bracket), naming
            the URL with its credentials hidden.
    """
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise ConfigurationError(f"malformed URL {redact_url(url)!r}: {exc}") from None


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
    return urlunsplit(parts._replace(query="&".join(kept))), query


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

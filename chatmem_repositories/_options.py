"""URL and option handling shared by every backend (no driver imports).

A backend declares its options as a frozen pydantic model with ``extra="forbid"``;
:func:`parse_options` merges the URL's query string with keyword options (keywords win),
validates them, and turns an unknown name into a :class:`~chatmem.ConfigurationError` that
names it and suggests the closest known one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from chatmem.exceptions import ConfigurationError

__all__ = ["Duration", "did_you_mean", "parse_options", "redact_url", "split_query"]

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


def redact_url(url: str) -> str:
    """Return ``url`` with any password replaced by ``***``, for reprs, logs and errors."""
    if "://" not in url:
        # Not a URL (a typo such as "user:pw@host/db"): hide whatever precedes an "@".
        return f"***@{url.rsplit('@', 1)[1]}" if "@" in url else url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """Split a URL into (URL without query, query options).

    Raises:
        ConfigurationError: If an option is given twice.
    """
    parts = urlsplit(url)
    query: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in query:
            raise ConfigurationError(f"option {key!r} is given twice in the URL")
        query[key] = value
    return urlunsplit(parts._replace(query="")), query


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

"""The URL option rule, one for every backend: chatmem options, declared driver parameters,
``driver_options`` for the rest; an unknown name fails before any connection, naming it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from chatmem.backend import Duration, InitializeSchema, parse_url_options
from chatmem.exceptions import ConfigurationError
from chatmem_repositories import create_async_repository, create_repository

# Every URL form a built-in backend accepts; none of these hosts is contacted.
URL_FORMS = [
    "memory://",
    "sqlite:///chat.db",
    "sqlite+aiosqlite:///chat.db",
    "postgresql+psycopg://app:pw@db:5432/app",
    "mysql+pymysql://app:pw@db:3306/app",
    "mariadb+pymysql://app:pw@db:3306/app",
    "redis://cache:6379/0",
    "rediss://cache:6380/0",
    "mongodb://db1:27017,db2:27017/chat",
    "mongodb+srv://cluster0.example.com/chat",
    "cassandra://10.0.0.1,10.0.0.2:9042/chat",
    "neo4j://graph:7687",
    "bolt://graph:7687",
    "bolt+s://graph:7687",
]


@pytest.mark.parametrize("url", URL_FORMS)
@pytest.mark.parametrize("create", [create_repository, create_async_repository])
def test_a_misspelt_option_fails_with_did_you_mean_on_every_backend(url: str, create: Any) -> None:
    for misspelt in (f"{url}?tll=60", url + ("&" if "?" in url else "?") + "ttl=60&tll=60"):
        with pytest.raises(ConfigurationError) as caught:
            create(misspelt)
        message = str(caught.value)
        assert "unknown option 'tll'" in message
        assert "did you mean 'ttl'" in message
        assert "driver_options" in message
        assert "pw" not in message
    with pytest.raises(ConfigurationError, match=r"'tll'.*did you mean 'ttl'"):
        create(url, tll=60)


@pytest.mark.parametrize(
    ("url", "old", "value", "current"),
    [
        ("redis://cache:6379/0", "socket_timeout", "3", "read_timeout"),
        ("redis://cache:6379/0", "socket_connect_timeout", "3", "connect_timeout"),
        ("mongodb://db1:27017/chat", "create_indexes", "false", "initialize_schema"),
        ("bolt://graph:7687", "connection_timeout", "3", "connect_timeout"),
        ("bolt://graph:7687", "create_schema", "false", "initialize_schema"),
        ("cassandra://10.0.0.1/chat", "request_timeout", "3", "read_timeout"),
    ],
)
def test_a_name_chatmem_does_not_use_is_an_unknown_option(
    url: str, old: str, value: str, current: str
) -> None:
    # The message lists the backend's options, so the one meant is there to be seen.
    with pytest.raises(ConfigurationError, match=rf"unknown option '{old}'.*{current}"):
        create_repository(f"{url}?{old}={value}")
    with pytest.raises(ConfigurationError, match=rf"unknown option '{old}'.*{current}"):
        create_repository(url, **{old: value})


def test_initialize_schema_is_a_word_not_a_boolean() -> None:
    for value in ("true", "false"):
        with pytest.raises(ConfigurationError, match=r"'initialize_schema'.*'always' or 'never'"):
            create_repository(f"cassandra://10.0.0.1/chat?initialize_schema={value}")
    with pytest.raises(ConfigurationError, match=r"'initialize_schema'.*'always' or 'never'"):
        create_repository("cassandra://10.0.0.1/chat", initialize_schema=False)


@pytest.mark.parametrize("url", URL_FORMS)
def test_driver_options_is_a_keyword_never_a_url_option(url: str) -> None:
    with pytest.raises(ConfigurationError, match="not a URL option"):
        create_repository(f"{url}?driver_options=x")


# -- parse_url_options itself -------------------------------------------------------------


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ttl: Duration | None = None
    initialize_schema: InitializeSchema = "always"
    read_timeout: Duration = timedelta(seconds=5)


def _parse(url: str, **keywords: Any) -> Any:
    return parse_url_options(
        _Options,
        url,
        keywords,
        backend="store",
        driver_parameters=("replicaSet", "tls"),
        driver_case_sensitive=False,
    )


def test_declared_parameters_pass_and_unknown_ones_are_named() -> None:
    parsed = _parse("store://h/db?REPLICASET=rs0&ttl=60&tls=true", tls=False)
    assert parsed.url == "store://h/db?REPLICASET=rs0&tls=true"
    assert parsed.options.ttl == timedelta(seconds=60)
    assert parsed.url_driver_parameters == {"REPLICASET": "rs0", "tls": "true"}
    assert parsed.driver_options == {"tls": False}
    with pytest.raises(ConfigurationError, match=r"'replicaSett'.*did you mean 'replicaSet'"):
        _parse("store://h/db?replicaSett=rs0")


def test_driver_options_win_over_declared_keywords_and_must_be_a_mapping() -> None:
    parsed = _parse("store://h/db", tls=False, driver_options={"tls": True, "pool": 3})
    assert parsed.driver_options == {"tls": True, "pool": 3}
    for bad in (["tls"], "tls=1", {1: "x"}):
        with pytest.raises(ConfigurationError, match="mapping"):
            _parse("store://h/db", driver_options=bad)


def test_keywords_win_over_the_url_and_twice_in_the_url_is_an_error() -> None:
    assert _parse("store://h/db?ttl=60", ttl=90).options.ttl == timedelta(seconds=90)
    with pytest.raises(ConfigurationError, match="given twice"):
        _parse("store://h/db?ttl=60&ttl=90")
    # A driver may read a parameter several times: it stays, both times.
    assert _parse("store://h/db?tls=true&tls=false").url == "store://h/db?tls=true&tls=false"


def test_a_bad_value_names_the_option() -> None:
    with pytest.raises(ConfigurationError, match="'initialize_schema'"):
        _parse("store://h/db?initialize_schema=sometimes")
    with pytest.raises(ConfigurationError, match="'ttl'"):
        _parse("store://h/db?ttl=-1")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///x.db?ttl=60", "sqlite:///x.db"),
        ("sqlite:////abs/x.db?ttl=60&timeout=3", "sqlite:////abs/x.db?timeout=3"),
        (
            "postgresql://u:p@h/db?sslmode=require&ttl=5#frag",
            "postgresql://u:p@h/db?sslmode=require#frag",
        ),
    ],
)
def test_taking_options_out_keeps_the_rest_of_the_url_as_written(url: str, expected: str) -> None:
    from chatmem.backend import split_query

    assert split_query(url, only={"ttl"})[0] == expected

"""URLs: credentials never printed, multi-host and SRV forms, malformed hosts and ports."""

from __future__ import annotations

import asyncio

import pytest

from chatmem import UserMessage
from chatmem.backend import is_secret_option, scrub, split_url
from chatmem.exceptions import ConfigurationError
from chatmem_repositories import create_async_repository, create_repository, redact_url
from chatmem_repositories.cassandra._options import parse_url as cassandra_url
from chatmem_repositories.mongodb._options import parse_url as mongo_url
from tests.support.servers import server_url

SECRET = "Zq7-S3cret"


# -- redaction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            f"mongodb://app:{SECRET}@h1:27017,h2:27017/db?replicaSet=rs",
            "mongodb://app:***@h1:27017,h2:27017/db?replicaSet=rs",
        ),
        (
            f"mongodb+srv://app:{SECRET}@cluster.example.com/db?authSource=admin",
            "mongodb+srv://app:***@cluster.example.com/db?authSource=admin",
        ),
        (f"redis://:{SECRET}@[::1]:6379/0", "redis://:***@[::1]:6379/0"),
        (f"bolt://h:7687?user=neo4j&password={SECRET}", "bolt://h:7687?user=neo4j&password=***"),
        (
            f"postgresql+psycopg://u@h/db?PassWord={SECRET}",
            "postgresql+psycopg://u@h/db?PassWord=***",
        ),
        (f"postgresql://u:pa/ss?{SECRET}@h/db", "postgresql://u:***@h/db"),
        (f"cassandra://u:a@{SECRET}@h1,h2/ks", "cassandra://u:***@h1,h2/ks"),
        (
            f"mongodb://h/db?tlsCertificateKeyFilePassword={SECRET};w=1",
            "mongodb://h/db?tlsCertificateKeyFilePassword=***;w=1",
        ),
        (
            f"mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:{SECRET}",
            "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=***",
        ),
        (
            f"http://u:{SECRET}@h/v1?api-key={SECRET}&apiKey={SECRET}&token={SECRET}#top",
            "http://u:***@h/v1?api-key=***&apiKey=***&token=***#top",
        ),
        (f"redis://[::1/0?sasl_password={SECRET}", "redis://[::1/0?sasl_password=***"),
        (f"app:{SECRET}@db/x", "***@db/x"),
        ("sqlite:////tmp/a@b/chat.db", "sqlite:////tmp/a@b/chat.db"),
        ("memory://", "memory://"),
    ],
)
def test_redact_url_hides_every_credential(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "name",
    ["password", "PASSWORD", "pwd", "pass", "secret", "client_secret", "token", "access_token",
     "api_key", "apikey", "API-KEY", "access_key", "sasl_password", "sslpassword",
     "tlsCertificateKeyFilePassword", "authMechanismProperties", "sig", "key"],
)  # fmt: skip
def test_password_like_options_are_secret(name: str) -> None:
    assert is_secret_option(name)


@pytest.mark.parametrize("name", ["user", "key_prefix", "authSource", "replicaSet", "ttl", "host"])
def test_other_options_are_not_secret(name: str) -> None:
    assert not is_secret_option(name)


def test_scrub_removes_credentials_quoted_by_a_driver() -> None:
    url = f"mongodb://u:{SECRET}@h/db?token=t%2Fok"
    assert scrub(f"bad {SECRET} and t/ok and t%2Fok", url) == "bad *** and *** and ***"


def _repr(url: str) -> str:
    repository = create_repository(url)
    try:
        return repr(repository)
    finally:
        repository.close()


@pytest.mark.parametrize(
    "url",
    [
        f"bolt://h:7687?user=neo4j&password={SECRET}",
        f"postgresql+psycopg://u@h/db?password={SECRET}",
        f"postgresql+psycopg://u:{SECRET}@h1:5432,h2:5433/db?sslpassword={SECRET}",
        f"mongodb://u:{SECRET}@h1:27017,h2:27017/db?replicaSet=rs",
        f"mongodb://h/db?tlsCertificateKeyFilePassword={SECRET}",
        f"redis://:{SECRET}@[::1]:6379/0",
        f"cassandra://u:{SECRET}@h1,h2:9042/ks",
    ],
)
def test_repository_reprs_hide_credentials(url: str) -> None:
    shown = _repr(url)
    assert SECRET not in shown
    assert "Repository(" in shown


def test_invalid_mongodb_url_error_hides_query_credentials() -> None:
    with pytest.raises(ConfigurationError, match="invalid MongoDB URL") as caught:
        create_repository(f"mongodb://h/db?tlsCertificateKeyFilePassword={SECRET}&tls=maybe")
    assert SECRET not in str(caught.value)


def test_sql_url_error_hides_credentials() -> None:
    with pytest.raises(ConfigurationError, match="invalid SQL repository URL") as caught:
        create_repository(f"postgresql+psycopg://u:{SECRET}@h:54x/db?password={SECRET}")
    assert SECRET not in str(caught.value)


def test_openai_model_reprs_hide_credentials() -> None:
    pytest.importorskip("openai")
    from chatmem.openai import AsyncOpenAIChatModel, OpenAIChatModel, OpenAIEmbeddingModel

    url = f"http://u:{SECRET}@127.0.0.1:1/v1?api-key={SECRET}"
    for cls in (OpenAIChatModel, AsyncOpenAIChatModel):
        model = cls(model="m", base_url=url, api_key="k")
        assert SECRET not in repr(model)
        assert "u:***@127.0.0.1:1" in repr(model)
    embedding = OpenAIEmbeddingModel(model="m", base_url=url, api_key="k")
    assert SECRET not in repr(embedding)


def test_settings_repr_hides_url_and_option_credentials() -> None:
    pytest.importorskip("pydantic_settings")
    from chatmem_repositories.settings import ChatMemorySettings

    settings = ChatMemorySettings(
        repository_url=f"bolt://h:7687?user=neo4j&password={SECRET}",
        repository_options={"password": SECRET, "api_key": SECRET, "label_prefix": "App"},
    )
    shown = repr(settings)
    assert SECRET not in shown
    assert "'label_prefix': 'App'" in shown
    assert SECRET not in settings.redacted_url


# -- multi-host and SRV forms ----------------------------------------------------------------


def test_mongodb_replica_set_url_with_credentials() -> None:
    url = f"mongodb://app:{SECRET}@h1:27017,h2:27017/db?replicaSet=rs&ttl=60"
    settings = mongo_url(url, {})
    assert settings.database == "db"
    assert settings.url == f"mongodb://app:{SECRET}@h1:27017,h2:27017/db?replicaSet=rs"
    assert settings.redacted_url == "mongodb://app:***@h1:27017,h2:27017/db?replicaSet=rs&ttl=60"
    assert settings.options.ttl is not None


def test_a_host_list_with_ipv6_hosts_is_split_on_every_python() -> None:
    # Pythons with the fix for CVE-2025-0938 refuse this netloc in urlsplit ("[" after text).
    parts = split_url(f"redis+cluster://u:{SECRET}@10.0.0.1:7001,[::1]:7002,cache/0?ttl=1#f")
    assert parts.scheme == "redis+cluster"
    assert parts.netloc == f"u:{SECRET}@10.0.0.1:7001,[::1]:7002,cache"
    assert (parts.path, parts.query, parts.fragment) == ("/0", "ttl=1", "f")
    assert parts.username == "u"
    assert parts.password == SECRET


def test_mongodb_replica_set_url_with_an_ipv6_member() -> None:
    url = f"mongodb://app:{SECRET}@h1:27017,[::1]:27018,[fe80::2]/db?replicaSet=rs&ttl=60"
    settings = mongo_url(url, {})
    assert settings.database == "db"
    assert settings.url == f"mongodb://app:{SECRET}@h1:27017,[::1]:27018,[fe80::2]/db?replicaSet=rs"
    assert settings.options.ttl is not None


def test_mongodb_repeated_driver_options_reach_pymongo() -> None:
    url = "mongodb://h/db?readPreference=nearest&readPreferenceTags=dc:ny&readPreferenceTags="
    assert mongo_url(url, {}).url == url


def test_mongodb_srv_url_is_checked_without_dns() -> None:
    url = f"mongodb+srv://app:{SECRET}@cluster0.example.com/db?srvMaxHosts=2&authSource=admin"
    settings = mongo_url(url, {})
    assert settings.database == "db"
    assert SECRET not in settings.redacted_url

    async def build() -> str:
        # The async client looks the SRV records up on first use, not when it is made.
        repository = create_async_repository(url)
        try:
            return repr(repository)
        finally:
            await repository.aclose()

    shown = asyncio.run(build())
    assert "mongodb+srv://app:***@cluster0.example.com/db" in shown
    assert SECRET not in shown


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("mongodb+srv://cluster0.example.com:27017/db", "takes no port"),
        ("mongodb+srv://a.example.com,b.example.com/db", "exactly one host"),
        ("mongodb+srv://cluster0.example.com/db?tls=maybe", "invalid MongoDB URL"),
        ("mongodb://h1:27x17,h2/db", "invalid MongoDB URL"),
        ("mongodb://h1:99999/db", "invalid MongoDB URL"),
        ("mongodb://[::1:27017/db", "malformed URL"),
        ("mongodb://::1/db", "invalid MongoDB URL"),
        ("cassandra://h1:99999/ks", "bad port"),
        ("cassandra://h1:x/ks", "bad port"),
        ("cassandra://[::1/ks", "malformed URL"),
        ("cassandra://::1/ks", "brackets"),
        ("cassandra://h1:9042,h2:9043/ks", "different ports"),
        ("cassandra://h1,/ks", "empty host"),
        ("redis://h1:6379,h2:6379/0", "one server"),
        ("redis://h:abc/0", "bad port"),
        ("redis://h:99999/0", "bad port"),
        ("redis://[::1/0", "malformed URL"),
        ("bolt://h:x", "bad port"),
        ("bolt://[::1:7687", "malformed URL"),
        ("neo4j://h1:7687,h2:7687", "one server"),
        ("postgresql+psycopg://u@h:54x/db", "invalid SQL repository URL"),
        ("postgresql+psycopg://u@h:99999/db", "bad port"),
        ("postgresql+psycopg://u@[::1/db", "malformed URL"),
        # A malformed host in a list is named, whatever the Python's own netloc check.
        ("redis+cluster://h1:7001,[::1:7002", r"malformed URL.*host '\[::1:7002'"),
        ("redis+cluster://h1:7001,[1.2.3.4]:7002", "malformed URL.*IPv4 address"),
        ("redis+cluster://h1:7001,h2[::1]:7002", r"malformed URL.*brackets stands alone"),
        ("redis+cluster://h1:7001,[::1]h2:7002", r"malformed URL.*brackets stands alone"),
        ("mongodb://h1,[::1/db?replicaSet=rs", "malformed URL"),
        ("mongodb://h1,[1.2.3.4]:27017/db", "malformed URL.*IPv4 address"),
        ("cassandra://h1,[::1/ks", "malformed URL"),
        ("postgresql+psycopg://u@h1:5432,[::1/db", "malformed URL"),
        ("postgresql+psycopg://u@h1:5432,[1.2.3.4]:5433/db", "malformed URL.*IPv4 address"),
        ("neo4j://h1:7687,[::1]:7687", "one server"),
        ("redis://h1:6379,[::1]:6379/0", "one server"),
        ("mysql+pymysql://u@h1,h2/db", "only PostgreSQL"),
    ],
)
def test_malformed_hosts_and_ports_are_configuration_errors(url: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        create_repository(url).close()


def test_a_malformed_host_in_a_list_is_named_without_the_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_repository(f"redis+cluster://u:{SECRET}@h1:7001,[::1:7002")
    assert str(caught.value) == (
        "malformed URL 'redis+cluster://u:***@h1:7001,[::1:7002': host '[::1:7002': "
        "Invalid IPv6 URL"
    )


def test_cassandra_contact_points() -> None:
    settings, *_ = cassandra_url(f"cassandra://u:{SECRET}@[::1]:9043,h2,10.0.0.3/ks", {})
    assert settings.hosts == ("::1", "h2", "10.0.0.3")
    assert settings.port == 9043
    assert SECRET not in repr(settings)
    settings, *_ = cassandra_url("cassandra://h1,[::1],[fe80::2]:9043/ks", {})
    assert settings.hosts == ("h1", "::1", "fe80::2")
    assert settings.port == 9043


@pytest.mark.backend("postgresql")
def test_postgresql_tries_every_host_of_a_multi_host_url() -> None:
    url = server_url("postgresql")
    head, _, rest = url.partition("@")
    hostport, _, database = rest.partition("/")
    # The first host refuses connections; libpq moves on to the second.
    with create_repository(f"{head}@127.0.0.1:1,{hostport}/{database}") as repository:
        assert repository.list_conversations(limit=1).conversation_ids is not None


@pytest.mark.backend("cassandra")
def test_cassandra_connects_through_several_contact_points() -> None:
    url = server_url("cassandra")
    head, _, rest = url.partition("//")
    hostport, _, keyspace = rest.partition("/")
    host, _, port = hostport.partition(":")
    multi = f"{head}//{host},localhost:{port or 9042}/{keyspace}"
    with create_repository(multi, create_keyspace=True) as repository:
        repository.append("urls-multi-host", [UserMessage("hi")])
        try:
            assert [m.text for m in repository.find_by_conversation_id("urls-multi-host")] == ["hi"]
        finally:
            repository.delete_by_conversation_id("urls-multi-host")


# -- names checked whole ---------------------------------------------------------------------


def test_names_with_a_trailing_newline_are_refused() -> None:
    from chatmem_repositories.cassandra._options import check_identifier, replication_map

    with pytest.raises(ConfigurationError, match="keyspace"):
        check_identifier("chat\n", "keyspace")
    with pytest.raises(ValueError, match="replication"):
        replication_map("dc1\n:3")
    with pytest.raises(ConfigurationError, match="replication"):
        create_repository("cassandra://127.0.0.1:1/ks", replication="dc1\n:3")
    with pytest.raises(ConfigurationError, match="database"):
        mongo_url("mongodb://h/db", {"database": "db\n"})
    with pytest.raises(ConfigurationError, match="database name"):
        mongo_url("mongodb://h/db%0A", {})

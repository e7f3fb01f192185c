"""create_repository: schemes, options, missing drivers, secrets and entry-point backends."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmem import (
    AsyncInMemoryChatMemoryRepository,
    ConfigurationError,
    InMemoryChatMemoryRepository,
    UserMessage,
)
from chatmem.repository import AsyncOwnedChatMemoryLog, OwnedChatMemoryLog
from chatmem_repositories import (
    ENTRY_POINT_GROUP,
    RepositoryBackend,
    create_async_repository,
    create_repository,
    redact_url,
    register_repository,
    unregister_repository,
)
from chatmem_repositories._registry import _BUILTINS

PASSWORD = "s3cr3t-pw"


# -- schemes ---------------------------------------------------------------------------------


def test_memory_scheme_builds_both_twins() -> None:
    with create_repository("memory://") as repository:
        assert isinstance(repository, InMemoryChatMemoryRepository)
    assert isinstance(create_async_repository("memory://"), AsyncInMemoryChatMemoryRepository)


@pytest.mark.parametrize(
    "spec", sorted({(b.module, b.sync_name, b.async_name) for b in _BUILTINS.values()})
)
def test_every_built_in_backend_meets_the_annotated_return_type(
    spec: tuple[str, str, str],
) -> None:
    # create_repository's annotation is only as true as this: checked by method names.
    module = pytest.importorskip(spec[0])
    assert issubclass(getattr(module, spec[1]), OwnedChatMemoryLog)
    assert issubclass(getattr(module, spec[2]), AsyncOwnedChatMemoryLog)
    assert issubclass(InMemoryChatMemoryRepository, OwnedChatMemoryLog)
    assert issubclass(AsyncInMemoryChatMemoryRepository, AsyncOwnedChatMemoryLog)


@pytest.mark.parametrize(
    ("url", "suggestion"),
    [
        ("sqlit:///chat.db", "sqlite"),
        ("postgressql://localhost/db", "postgresql"),
        ("reddis://localhost", "redis"),
        ("mongo://localhost", "mongodb"),
        ("memroy://", "memory"),
    ],
)
def test_unknown_scheme_names_it_and_suggests(url: str, suggestion: str) -> None:
    scheme = url.split("://")[0]
    with pytest.raises(ConfigurationError, match="unknown repository scheme") as caught:
        create_repository(url)
    assert repr(scheme) in str(caught.value)
    assert f"did you mean {suggestion!r}" in str(caught.value)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ConfigurationError, match=repr(scheme)):
        create_async_repository(url)


def test_unknown_scheme_without_a_close_match_has_no_suggestion() -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_repository("zzqx://host")
    assert "did you mean" not in str(caught.value)


def test_text_that_is_not_a_url_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="scheme://"):
        create_repository("chat.db")


def test_scheme_is_case_insensitive() -> None:
    with create_repository("MEMORY://") as repository:
        assert isinstance(repository, InMemoryChatMemoryRepository)


# -- options ---------------------------------------------------------------------------------


def test_unknown_url_option_is_named_with_suggestion() -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_repository("memory://?tll=60")
    message = str(caught.value)
    assert "unknown option 'tll'" in message
    assert "did you mean 'ttl'" in message
    assert "chatmem options: clock, ttl" in message


def test_unknown_keyword_option_is_named() -> None:
    with pytest.raises(ConfigurationError, match="unknown option 'pool_size'"):
        create_async_repository("memory://", pool_size=3)


@pytest.mark.parametrize("value", ["-5", "0", "soon"])
def test_bad_option_value_is_named(value: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid value for option 'ttl'"):
        create_repository(f"memory://?ttl={value}")


def test_option_given_twice_in_the_url() -> None:
    with pytest.raises(ConfigurationError, match="'ttl' is given twice"):
        create_repository("memory://?ttl=5&ttl=6")


def test_keyword_options_win_over_the_url() -> None:
    seen: list[dict[str, Any]] = []

    def create(url: str, **options: Any) -> InMemoryChatMemoryRepository:
        seen.append({"url": url, **options})
        return InMemoryChatMemoryRepository()

    register_repository("probe", RepositoryBackend(create, create))
    try:
        create_repository("probe://host/x?a=1", a=2).close()
    finally:
        unregister_repository("probe")
    assert seen == [{"url": "probe://host/x?a=1", "a": 2}]
    # Through the shared parser the keyword wins, and a text "3600" in the URL is seconds.
    with create_repository("memory://?ttl=1", ttl=3600) as repository:
        assert repository._ttl is not None


def test_registered_scheme_wins_over_built_in() -> None:
    made: list[str] = []

    def create(url: str, **options: Any) -> InMemoryChatMemoryRepository:
        made.append(url)
        return InMemoryChatMemoryRepository()

    register_repository("Redis", RepositoryBackend(create, create))
    try:
        create_repository("redis://nowhere:1/0").close()
    finally:
        unregister_repository("redis")
    assert made == ["redis://nowhere:1/0"]
    unregister_repository("never-registered")  # not an error


# -- missing drivers ---------------------------------------------------------------------------

DRIVERS = {
    "sqlite": (["sqlalchemy"], "sql", "sqlite"),
    "postgresql+psycopg": (["sqlalchemy"], "sql", "postgresql"),
    "redis": (["redis"], "redis", "redis"),
    "mongodb": (["pymongo"], "mongodb", "mongodb"),
    "cassandra": (["cassandra"], "cassandra", "cassandra"),
    "bolt": (["neo4j"], "neo4j", "neo4j"),
}


@pytest.fixture
def hide_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Make some top-level modules unimportable and forget cached backend modules."""

    def hide(drivers: list[str], backend: str) -> None:
        package = f"chatmem_repositories.{backend}"
        for name in list(sys.modules):
            top = name.split(".")[0]
            if top in drivers or name == package or name.startswith(package + "."):
                monkeypatch.delitem(sys.modules, name)
        for driver in drivers:
            # None in sys.modules makes "import driver" raise ImportError(name=driver).
            monkeypatch.setitem(sys.modules, driver, None)  # type: ignore[arg-type]

    yield hide
    importlib.invalidate_caches()


@pytest.mark.parametrize("scheme", sorted(DRIVERS))
def test_missing_driver_gives_the_exact_pip_line(scheme: str, hide_modules: Any) -> None:
    drivers, backend, extra = DRIVERS[scheme]
    hide_modules(drivers, backend)
    with pytest.raises(ConfigurationError) as caught:
        create_repository(f"{scheme}://user:{PASSWORD}@localhost/x")
    message = str(caught.value)
    assert f'pip install "chatmem[{extra}]"' in message
    assert drivers[0] in message
    assert PASSWORD not in message
    with pytest.raises(ConfigurationError, match=rf'pip install "chatmem\[{extra}\]"'):
        create_async_repository(f"{scheme}://localhost/x")


# -- secrets -----------------------------------------------------------------------------------


def test_redact_url() -> None:
    assert redact_url(f"postgresql://app:{PASSWORD}@db:5432/x?a=1") == (
        "postgresql://app:***@db:5432/x?a=1"
    )
    assert redact_url("redis://localhost:6379/0") == "redis://localhost:6379/0"
    assert PASSWORD not in redact_url(f"redis://:{PASSWORD}@localhost:6379/0")
    assert PASSWORD not in redact_url(f"app:{PASSWORD}@db/x")


@pytest.mark.parametrize(
    "url",
    [
        f"nosuch://app:{PASSWORD}@db/x",
        f"memory://app:{PASSWORD}@db/x?bogus=1",
        f"memory://app:{PASSWORD}@db/x?ttl=never",
        f"app:{PASSWORD}@db/x",
    ],
)
def test_password_never_in_errors(url: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_repository(url)
    assert PASSWORD not in str(caught.value)
    assert PASSWORD not in repr(caught.value)


BACKEND_URLS = [
    f"postgresql+psycopg://test:{PASSWORD}@127.0.0.1:25432/testdb",
    f"mysql+pymysql://test:{PASSWORD}@127.0.0.1:23306/testdb",
    f"redis://:{PASSWORD}@127.0.0.1:63799/0",
    f"mongodb://test:{PASSWORD}@127.0.0.1:27027/chatmem_test",
    f"cassandra://test:{PASSWORD}@127.0.0.1:9042/chatmem_test",
    f"bolt://neo4j:{PASSWORD}@127.0.0.1:7687",
]


@pytest.mark.parametrize("url", BACKEND_URLS, ids=lambda u: u.split(":")[0])
def test_password_never_in_backend_errors_or_reprs(url: str) -> None:
    # A bad option is rejected before connecting, and the error hides the password.
    with pytest.raises(ConfigurationError) as caught:
        create_repository(url, no_such_option=1)
    assert "no_such_option" in str(caught.value)
    assert PASSWORD not in str(caught.value)
    # With a wrong password the backend either fails (saying so without the password) or
    # connects lazily, in which case its repr must hide the password.
    seen: list[str] = []
    try:
        repository = create_repository(url)
    except Exception as exc:  # the backend's own connection error
        seen += [str(exc), repr(exc)]
    else:
        seen += [repr(repository), str(repository)]
        try:
            repository.close()
        except Exception as exc:
            seen.append(str(exc))
    assert seen
    assert not [text for text in seen if PASSWORD in text]


# -- entry points ------------------------------------------------------------------------------


@pytest.fixture
def throwaway_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install a tiny distribution advertising ``throwaway://`` through an entry point."""
    (tmp_path / "throwaway_backend.py").write_text(
        textwrap.dedent(
            """
            from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
            from chatmem_repositories import RepositoryBackend

            CREATED = []


            def _create(url, **options):
                CREATED.append((url, options))
                return InMemoryChatMemoryRepository()


            def _create_async(url, **options):
                CREATED.append((url, options))
                return AsyncInMemoryChatMemoryRepository()


            BACKEND = RepositoryBackend(_create, _create_async)
            NOT_A_BACKEND = object()
            """
        )
    )
    dist_info = tmp_path / "throwaway_backend-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: throwaway-backend\nVersion: 1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n"
        "throwaway = throwaway_backend:BACKEND\n"
        "broken = throwaway_backend:NOT_A_BACKEND\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "throwaway_backend", raising=False)
    importlib.invalidate_caches()
    return tmp_path


def test_entry_point_backend_is_found(throwaway_distribution: Path) -> None:
    with create_repository("throwaway://somewhere/x?flag=1", extra=2) as repository:
        assert isinstance(repository, InMemoryChatMemoryRepository)
        repository.append("c", [UserMessage("hello")])
        assert [s.message.text for s in repository.find_recent("c", 10)] == ["hello"]  # type: ignore[union-attr]
    assert isinstance(
        create_async_repository("throwaway://somewhere"), AsyncInMemoryChatMemoryRepository
    )
    module = sys.modules["throwaway_backend"]
    assert module.CREATED == [
        ("throwaway://somewhere/x?flag=1", {"extra": 2}),
        ("throwaway://somewhere", {}),
    ]


def test_entry_point_names_are_suggested(throwaway_distribution: Path) -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'throwaway'"):
        create_repository("throwawya://x")


def test_entry_point_that_is_not_a_backend_is_an_error(throwaway_distribution: Path) -> None:
    with pytest.raises(ConfigurationError, match="is not a RepositoryBackend"):
        create_repository("broken://x")


def test_registered_scheme_wins_over_entry_point(throwaway_distribution: Path) -> None:
    made: list[str] = []

    def create(url: str, **options: Any) -> InMemoryChatMemoryRepository:
        made.append(url)
        return InMemoryChatMemoryRepository()

    register_repository("throwaway", RepositoryBackend(create, create))
    try:
        create_repository("throwaway://x").close()
    finally:
        unregister_repository("throwaway")
    assert made == ["throwaway://x"]
    assert "throwaway_backend" not in sys.modules  # the entry point was never loaded

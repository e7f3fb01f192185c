"""The harness's parts every scenario uses: the registry, a run's options, backends, records.

A scenario is a function ``run(ctx: Run) -> None`` in a module of ``benchmarks/scenarios/``,
registered with :func:`scenario`. The command line (``python -m benchmarks``) resolves the
backends, then calls the scenario once per backend with a :class:`Run` that says what to
measure (sizes, turns, seconds, clients) and where its records go (:meth:`Run.record`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._results import append_record
from chatmem import AssistantMessage, Message, UserMessage

__all__ = [
    "SCENARIOS",
    "TEXT",
    "Run",
    "Scenario",
    "backend_url",
    "history",
    "repository_options",
    "scenario",
]

# 200 characters: the message every scenario stores, as a short chat message is.
TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]

# Where each backend's test server is when CHATMEM_TEST_<NAME>_URL is not set: the ports
# scripts/servers/*/start.sh use (tests/support/servers.py has the same table).
DEFAULT_URLS = {
    "memory": "memory://",
    "postgresql": "postgresql+psycopg://test:test@127.0.0.1:25432/testdb",
    "mariadb": "mysql+pymysql://test:test@127.0.0.1:23306/testdb?charset=utf8mb4",
    "redis": "redis://127.0.0.1:63799/0",
    "mongodb": "mongodb://127.0.0.1:27027/chatmem_test",
    "cassandra": "cassandra://127.0.0.1:9042/chatmem_test",
    "neo4j": "bolt://127.0.0.1:7687",
}
BACKENDS = ("memory", "sqlite", "postgresql", "mariadb", "redis", "mongodb", "cassandra", "neo4j")
# chatmem creates its tables in a server database only when asked (SQLite gets them anyway).
_SERVER_SQL = ("postgresql", "mysql", "mariadb")


def backend_url(name: str) -> str:
    """The URL of backend ``name``: ``CHATMEM_TEST_<NAME>_URL``, else the test server's.

    ``sqlite`` is a new file in the temporary directory.
    """
    if name == "sqlite":
        return f"sqlite:///{tempfile.mkdtemp(prefix='chatmem-bench-')}/bench.db"
    if name not in DEFAULT_URLS:
        raise ValueError(f"unknown backend {name!r}; one of {', '.join(BACKENDS)}")
    return os.environ.get(f"CHATMEM_TEST_{name.upper()}_URL", DEFAULT_URLS[name])


def backend_of(url: str) -> str:
    """The backend name of a repository URL (``postgresql+psycopg://...`` -> ``postgresql``)."""
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    return {"mysql": "mariadb", "bolt": "neo4j", "neo4j": "neo4j", "rediss": "redis"}.get(
        scheme, scheme
    )


def repository_options(url: str) -> dict[str, Any]:
    """Options so that a benchmark's repository creates its schema on a server database."""
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    return {"initialize_schema": "always"} if scheme in _SERVER_SQL else {}


def history(n: int, start: int = 0) -> list[Message]:
    """``n`` stored messages, user and assistant alternating, 200 characters each."""
    return [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
        for i in range(start, start + n)
    ]


def chunks(messages: Sequence[Message], size: int = 1000) -> list[Sequence[Message]]:
    """``messages`` in appends of ``size`` (how the scenarios fill long histories)."""
    return [messages[start : start + size] for start in range(0, len(messages), size)]


@dataclass
class Run:
    """What one scenario run measures, on which backend, and where its records go."""

    scenario: str
    backend: str | None = None
    url: str | None = None
    sizes: list[int] = field(default_factory=list)
    turns: int = 100
    warmup: int = 10
    duration: float = 5.0
    clients: list[int] = field(default_factory=list)
    is_async: bool = False
    results: Path | None = None
    extra: list[str] = field(default_factory=list)
    """Options the harness does not know, passed on (pyperf's, for micro-benchmarks)."""
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def flavor(self) -> str:
        """``"async"`` or ``"sync"``: which twin of the API the run measures."""
        return "async" if self.is_async else "sync"

    def record(
        self,
        params: Mapping[str, Any],
        samples: Sequence[float] | None = None,
        *,
        unit: str = "ms",
        results: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Append one record of this scenario (backend and flavor added to ``params``)."""
        base: dict[str, Any] = {"flavor": self.flavor}
        if self.backend:
            base["backend"] = self.backend
        record = append_record(
            self.scenario,
            {**base, **params},
            samples,
            unit=unit,
            results=results,
            directory=self.results,
        )
        self.records.append(record)
        return record


@dataclass(frozen=True)
class Scenario:
    """A registered scenario: its function and the defaults of its options."""

    name: str
    func: Callable[[Run], None]
    summary: str
    backends: tuple[str, ...] | None
    """The backends it runs on by default; ``None``: it uses no backend (in-process)."""
    sizes: tuple[int, ...] = ()
    turns: int = 100
    duration: float = 5.0
    clients: tuple[int, ...] = ()
    micro: bool = False
    """Measured with pyperf (the run's ``extra`` options are pyperf's)."""


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    name: str,
    *,
    backends: Sequence[str] | None = ("memory",),
    sizes: Sequence[int] = (),
    turns: int = 100,
    duration: float = 5.0,
    clients: Sequence[int] = (),
    micro: bool = False,
) -> Callable[[Callable[[Run], None]], Callable[[Run], None]]:
    """Register a scenario under ``name``, with the defaults of its options."""

    def register(func: Callable[[Run], None]) -> Callable[[Run], None]:
        summary = (func.__doc__ or name).strip().splitlines()[0]
        SCENARIOS[name] = Scenario(
            name,
            func,
            summary,
            None if backends is None else tuple(backends),
            tuple(sizes),
            turns,
            duration,
            tuple(clients),
            micro,
        )
        return func

    return register

"""Repositories for the framework integration tests: in memory, SQLite, PostgreSQL, Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmem_repositories import create_async_repository, create_repository
from tests.conftest import server_url

BACKENDS = ["memory", "sqlite", "postgresql", "redis"]


def url_of(name: str, tmp_path: Path) -> str:
    if name == "memory":
        return "memory://"
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'chat.db'}"
    return server_url(name)


def new_conversation_id() -> str:
    # Servers are shared between test runs: every test writes its own conversations.
    return f"it-{uuid.uuid4().hex}"


@pytest.fixture(params=BACKENDS)
def repository(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    repo = create_repository(url_of(request.param, tmp_path))
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture(params=BACKENDS)
async def async_repository(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    repo = create_async_repository(url_of(request.param, tmp_path))
    try:
        yield repo
    finally:
        await repo.aclose()


# The other four backends: one smoke test per integration, so every backend is covered.
OTHER_BACKENDS = ["mariadb", "mongodb", "cassandra", "neo4j"]


@pytest.fixture(params=OTHER_BACKENDS)
def other_repository(request: pytest.FixtureRequest) -> Iterator[Any]:
    repo = create_repository(server_url(request.param))
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture(params=OTHER_BACKENDS)
async def other_async_repository(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    repo = create_async_repository(server_url(request.param))
    try:
        yield repo
    finally:
        await repo.aclose()

"""Repositories for the framework integration tests: in memory, SQLite, PostgreSQL, Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmem_repositories import create_async_repository, create_repository
from tests.support.backends import INTEGRATION, INTEGRATION_SMOKE, backend_url


def new_conversation_id() -> str:
    # Servers are shared between test runs: every test writes its own conversations.
    return f"it-{uuid.uuid4().hex}"


@pytest.fixture(params=INTEGRATION)
def repository(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    repo = create_repository(backend_url(request.param, tmp_path))
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture(params=INTEGRATION)
async def async_repository(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    repo = create_async_repository(backend_url(request.param, tmp_path))
    try:
        yield repo
    finally:
        await repo.aclose()


@pytest.fixture(params=INTEGRATION_SMOKE)
def other_repository(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    repo = create_repository(backend_url(request.param, tmp_path))
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture(params=INTEGRATION_SMOKE)
async def other_async_repository(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Any]:
    repo = create_async_repository(backend_url(request.param, tmp_path))
    try:
        yield repo
    finally:
        await repo.aclose()

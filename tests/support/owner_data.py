"""Logs for the owner-data tests: every backend, plain and encrypted, sync and async."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chatmem.encryption import AsyncEncryptedLog, EncryptedLog, StaticKeyProvider
from chatmem_repositories import create_async_repository, create_repository
from tests.support.backends import SERVERS, backend_url
from tests.support.cleanup import drop_mongodb_collections

BACKENDS = ("memory", "sqlite", *SERVERS)
CASES = [
    pytest.param((name, encrypted), id=f"{name}-{'encrypted' if encrypted else 'plain'}")
    for name in BACKENDS
    for encrypted in (False, True)
]


def _keys() -> StaticKeyProvider:
    return StaticKeyProvider({"k1": os.urandom(32)})


@contextmanager
def _url(name: str, tmp_path: Path) -> Iterator[str]:
    """The backend's URL; on MongoDB, collections of one test's own, dropped after it.

    FerretDB scans a whole collection for most queries: in the shared default collections a
    test would be as slow as everything ever stored there.
    """
    url = backend_url(name, tmp_path)
    if name != "mongodb":
        yield url
        return
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    try:
        yield url + ("&" if "?" in url else "?") + f"collection_prefix={prefix}"
    finally:
        drop_mongodb_collections(url, prefix)


@pytest.fixture(params=CASES)
def owner_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A repository of one backend, or an encrypted log over it (a key of its own)."""
    name, encrypted = request.param
    with _url(name, tmp_path) as url:
        log: Any = create_repository(url)
        if encrypted:
            log = EncryptedLog(log, _keys())
        try:
            yield log
        finally:
            log.close()


@pytest.fixture(params=CASES)
async def async_owner_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """The async twin of :func:`owner_log`."""
    name, encrypted = request.param
    with _url(name, tmp_path) as url:
        log: Any = create_async_repository(url)
        if encrypted:
            log = AsyncEncryptedLog(log, _keys())
        try:
            yield log
        finally:
            await log.aclose()

"""Conventions as tests: sorted public API, sync/async twins, no driver imports in the core."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

PUBLIC_MODULES = [
    "chatmem",
    "chatmem.messages",
    "chatmem.exceptions",
    "chatmem.conversation_ids",
    "chatmem.memory",
    "chatmem.repository",
    "chatmem.tokens",
    "chatmem.window",
    "chatmem.testing",
    "chatmem.client",
    "chatmem.model",
    "chatmem.advisor",
    "chatmem.tools",
    "chatmem.openai",
    "chatmem.vector_store",
    "chatmem.embedding",
    "chatmem.testing.vectors",
    "chatmem_repositories.sql",
    "chatmem_repositories.redis",
    "chatmem_repositories.mongodb",
    "chatmem_repositories.cassandra",
    "chatmem_repositories.neo4j",
    "chatmem_repositories",
    "chatmem_advisors",
]


def _isort_key(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 enforces: CONSTANTS, then Classes, then functions.
    if name.isupper():
        return (0, name)
    return (1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.__all__ names missing {attribute}"
        obj = getattr(module, attribute)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attribute} has no docstring"


def _twins() -> list[tuple[type, type]]:
    pairs = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            if attribute.startswith("Async") and hasattr(module, attribute[5:]):
                pairs.append((getattr(module, attribute), getattr(module, attribute[5:])))
    return pairs


@pytest.mark.parametrize("pair", _twins(), ids=lambda p: p[0].__name__)
def test_every_async_class_has_a_sync_twin_with_the_same_methods(pair: tuple[type, type]) -> None:
    async_cls, sync_cls = pair

    def methods(cls: type) -> set[str]:
        names = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
        return {"close" if n == "aclose" else n for n in names}

    assert methods(async_cls) == methods(sync_cls)
    for name in methods(sync_cls):
        sync_method = getattr(sync_cls, name)
        async_method = getattr(async_cls, "aclose" if name == "close" else name)
        if inspect.iscoroutinefunction(async_method):
            assert not inspect.iscoroutinefunction(sync_method), f"{name} is async in the twin"


def test_importing_chatmem_imports_no_driver_or_sdk() -> None:
    code = (
        "import sys, chatmem, chatmem.memory, chatmem.repository, chatmem_repositories;"
        "banned = ('sqlalchemy', 'redis', 'pymongo', 'cassandra', 'neo4j', 'openai', 'tiktoken');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

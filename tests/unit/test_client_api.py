"""Conventions for the client modules: sorted public API, twins, no SDK import from chatmem."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

MODULES = [
    "chatmem.client",
    "chatmem.model",
    "chatmem.advisor",
    "chatmem.tools",
    "chatmem.openai",
    "chatmem.testing.openai_server",
]


def _key(name: str) -> tuple[int, str]:
    if name.isupper():
        return (0, name)
    return (1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", MODULES)
def test_all_sorted_documented(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_key)
    for attribute in exported:
        obj = getattr(module, attribute)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attribute} has no docstring"


def _pairs() -> list[tuple[type, type]]:
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            twin = attribute[5:]
            if attribute.startswith("Async") and hasattr(module, twin):
                found.append((getattr(module, attribute), getattr(module, twin)))
    return found


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: p[0].__name__)
def test_twins_have_the_same_methods(pair: tuple[type, type]) -> None:
    def methods(cls: type) -> set[str]:
        names = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
        return {"close" if n == "aclose" else n for n in names}

    assert methods(pair[0]) == methods(pair[1])


def test_import_chatmem_does_not_import_openai() -> None:
    code = "import sys, chatmem, chatmem.client, chatmem_advisors; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

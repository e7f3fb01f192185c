"""The scenarios: one small module each, registered with ``benchmarks.harness.scenario``."""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["load_all"]


def load_all() -> None:
    """Import every scenario module, so that each registers itself."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")

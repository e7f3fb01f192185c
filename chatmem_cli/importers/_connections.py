"""Opening the databases other libraries stored conversations in (drivers imported when used)."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str) -> ModuleType:
    """Import a source's driver or framework, naming the install line when it is missing.

    Args:
        module: The package to import.
        extra: The chatmem extra that installs it.

    Raises:
        ImportError: If the package is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f'this chatmem importer needs {module!r}: pip install "chatmem[{extra}]"'
        ) from exc

"""Opening the databases other libraries stored conversations in (drivers imported when used).

Server URLs are read with the repositories' own parsing (``chatmem_repositories``), so a
source URL means what the same URL means to a chatmem repository; what that parsing refuses
becomes a :class:`~chatmem_cli.importers._conversations.SourceError` naming the source kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from chatmem.exceptions import ConfigurationError
from chatmem_cli.importers._conversations import SourceError

__all__ = ["require", "source_errors"]


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


@contextmanager
def source_errors(kind: str) -> Iterator[None]:
    """Turn what the repositories' URL parsing refuses into a :class:`SourceError`.

    Args:
        kind: The source kind, which starts the message (``"spring-ai-neo4j"``).
    """
    try:
        yield
    except ConfigurationError as exc:
        raise SourceError(f"{kind}: {exc}") from None

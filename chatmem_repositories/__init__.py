"""Storage backends for chatmem, chosen by URL.

Each backend is a self-contained subpackage that imports its driver only inside itself, so
installing one extra (``pip install "chatmem[redis]"``) is enough to use it. Every one has
the same files and option names and is built from the public toolkit, :mod:`chatmem.backend`,
as a third-party backend found through the ``chatmem.repositories`` entry point would be.

Example:
    ```python
    from chatmem_repositories import create_repository

    repository = create_repository("sqlite:///chat.db")
    ```
"""

from chatmem.backend import redact_url
from chatmem_repositories._registry import (
    ENTRY_POINT_GROUP,
    RepositoryBackend,
    create_async_repository,
    create_repository,
    register_repository,
    unregister_repository,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ChatMemorySettings",
    "RepositoryBackend",
    "create_async_repository",
    "create_repository",
    "redact_url",
    "register_repository",
    "unregister_repository",
]


def __getattr__(name: str) -> object:
    # The settings need pydantic-settings (an extra): import them only when asked for.
    if name == "ChatMemorySettings":
        from chatmem_repositories.settings import ChatMemorySettings

        return ChatMemorySettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

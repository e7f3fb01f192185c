"""A person's data: erase it, export it; and key rotation for an encrypted store.

:func:`erase_owner` deletes everything stored of one owner (their conversations, every fork
of them, summaries and, given the vector store, the long-term memory's entries);
:func:`export_owner` writes the same data as JSON Lines; :func:`rotate_keys` wraps every
data key of an encrypted store by the current key-encryption key. Each has an async twin
and a command: ``chatmem erase``, ``chatmem export --owner``, ``chatmem keys rotate``. All
are safe to run again, and a run after an interrupted one finishes the job.

Example:
    ```python
    import io

    from chatmem import InMemoryChatMemoryRepository, UserMessage, scoped_conversation_id
    from chatmem.privacy import erase_owner, export_owner

    repository = InMemoryChatMemoryRepository()
    repository.append(scoped_conversation_id("ann", "trip"), [UserMessage("I live in Paris")])
    out = io.StringIO()
    assert export_owner(repository, "ann", out).messages == 1
    assert erase_owner(repository, "ann").conversations == 1
    assert erase_owner(repository, "ann").conversations == 0
    ```
"""

from __future__ import annotations

from chatmem._async.owner_data import async_erase_owner, async_export_owner, async_rotate_keys
from chatmem._owner_data import ErasureReport, ExportReport, RotationReport
from chatmem._sync.owner_data import erase_owner, export_owner, rotate_keys

__all__ = [
    "ErasureReport",
    "ExportReport",
    "RotationReport",
    "async_erase_owner",
    "async_export_owner",
    "async_rotate_keys",
    "erase_owner",
    "export_owner",
    "rotate_keys",
]

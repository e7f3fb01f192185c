"""An owner's data: erase it, export it; and rotate the keys of an encrypted store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, TextIO, TypeVar

from chatmem._async.repository import (
    AsyncChatMemoryLog,
    AsyncMessageCounter,
    AsyncSessionLog,
    AsyncSummaryStore,
)
from chatmem._async.sessions import AsyncSessions
from chatmem._async.vector_store import AsyncVectorStore
from chatmem._owner_data import (
    ErasureReport,
    ExportReport,
    RotationReport,
    add_up,
    checked_concurrency,
    checked_owner,
    message_line,
    summary_line,
)
from chatmem._records import Position
from chatmem._twins import AsyncLock, AsyncTwin, async_run_all, check_flavor
from chatmem._vector_types import VectorFilter
from chatmem.conversation_ids import owner_of
from chatmem.exceptions import ConfigurationError

if TYPE_CHECKING:
    from chatmem._async.encrypted import AsyncEncryptedLog

__all__ = ["async_erase_owner", "async_export_owner", "async_rotate_keys"]

_PAGE = 500  # conversation ids or messages per read

_OnConversation = Callable[[str], object]
T = TypeVar("T")


async def _owned(log: AsyncChatMemoryLog, owner: str) -> list[str]:
    """Every conversation id of the owner, read before anything is deleted (ids only)."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = await log.list_conversations(owner=owner, limit=_PAGE, cursor=cursor)
        found += page.conversation_ids
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


class _Tree:
    """Walks an owner's conversations and, recursively, every fork of them, once each.

    Several walks may run at once (one per root): each conversation is claimed by one.
    """

    def __init__(self, log: AsyncChatMemoryLog, owned: list[str]) -> None:
        self.log = log
        self.owned = set(owned)
        self.seen: set[str] = set()
        self._lock = AsyncLock()
        # A log without versions keeps no forks.
        self._sessions = AsyncSessions(log) if isinstance(log, AsyncSessionLog) else None

    async def forks(self, conversation_id: str) -> list[str]:
        if self._sessions is None:
            return []
        return [fork.conversation_id for fork in await self._sessions.list_forks(conversation_id)]

    async def _claim(self, conversation_id: str) -> bool:
        async with self._lock:
            if conversation_id in self.seen:
                return False
            self.seen.add(conversation_id)
            return True

    async def parents_first(self, root: str) -> list[str]:
        """``root`` and the forks under it not claimed yet, each parent before its forks."""
        order: list[str] = []
        stack = [root]
        while stack:
            conversation_id = stack.pop()
            if await self._claim(conversation_id):
                order.append(conversation_id)
                stack += reversed(await self.forks(conversation_id))
        return order


async def _run_all(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run the calls at once; a call alone runs here (the sync twin starts no thread)."""
    if len(calls) == 1:
        return [await calls[0]()]
    return await async_run_all(list(calls))


async def _count(log: AsyncChatMemoryLog, conversation_id: str) -> int:
    if isinstance(log, AsyncMessageCounter):
        return await log.count_messages(conversation_id)
    return len(await log.find_by_conversation_id(conversation_id))


async def async_erase_owner(
    log: AsyncChatMemoryLog,
    owner: str,
    *,
    vector_store: AsyncVectorStore | None = None,
    concurrency: int = 1,
    on_conversation: _OnConversation | None = None,
) -> ErasureReport:
    """Delete everything stored of an owner: conversations, forks, summaries, vector entries.

    The owner's conversations are those ``list_conversations(owner=owner)`` lists (ids made
    with :func:`~chatmem.conversation_ids.scoped_conversation_id`). Each is deleted whole
    (messages, events, summary), and so is every fork of it, recursively, whatever its id:
    a fork holds copies of the owner's messages. Forks go before their parent, because a
    fork is found through its parent: an interrupted run leaves nothing that a second run
    cannot find. With ``vector_store``, the entries the vector memory advisor stored for
    them go too: those tagged with the owner, and those of each fork with another owner.

    Safe to run again: a run after an interrupted one finishes the job, and a run with
    nothing left deletes nothing and reports zeros. On an encrypted log, deleting a
    conversation deletes its data keys.

    Example:
        ```python
        report = await async_erase_owner(repository, "alice@example.com")
        print(report.conversations, report.messages)
        ```

    Args:
        log: The repository (or an encrypted log over it).
        owner: The owner.
        vector_store: The long-term memory's vector store, if the application has one.
        concurrency: How many of the owner's conversations (each with its forks) are
            erased at once; their round trips overlap.
        on_conversation: Called with each of the owner's conversation ids once it and its
            forks are deleted (a progress bar).

    Returns:
        What was deleted.

    Raises:
        ConfigurationError: ``owner`` is empty, ``concurrency`` is below 1, or
            ``vector_store`` is of the other flavor.
    """
    checked_owner(owner)
    checked_concurrency(concurrency)
    if vector_store is not None:
        check_flavor(vector_store, "delete_where", is_async=AsyncTwin.IS_ASYNC, role="vector store")
    owned = await _owned(log, owner)
    tree = _Tree(log, owned)
    report = ErasureReport()
    for start in range(0, len(owned), concurrency):
        roots = owned[start : start + concurrency]
        erase = [partial(_erase_tree, log, owner, root, tree, vector_store) for root in roots]
        parts = await _run_all(erase)
        for root, part in zip(roots, parts, strict=True):
            add_up(report, part)
            if on_conversation is not None:
                on_conversation(root)
    if vector_store is not None:
        # Last, so that a run stopped before it still reaches it when run again.
        report.vector_entries += await vector_store.delete_where(VectorFilter(owner=owner))
    return report


async def _erase_tree(
    log: AsyncChatMemoryLog,
    owner: str,
    root: str,
    tree: _Tree,
    vector_store: AsyncVectorStore | None,
) -> ErasureReport:
    """Erase ``root`` and the forks under it, deepest first."""
    report = ErasureReport()
    # Reversed, a parents-first order deletes every fork before its parent: whatever is
    # left when a run stops is still reachable from the owner's listing.
    for conversation_id in reversed(await tree.parents_first(root)):
        messages = await _count(log, conversation_id)
        summaries = 0
        if isinstance(log, AsyncSummaryStore) and await log.find_summary(conversation_id):
            summaries = 1
        if vector_store is not None and owner_of(conversation_id) != owner:
            # Before the conversation: once it is gone, a run again could not find this fork.
            where = VectorFilter(conversation_id=conversation_id)
            report.vector_entries += await vector_store.delete_where(where)
        await log.delete_by_conversation_id(conversation_id)
        if messages or summaries:
            if conversation_id in tree.owned:
                report.conversations += 1
            else:
                report.forks += 1
        report.messages += messages
        report.summaries += summaries
    return report


async def async_export_owner(
    log: AsyncChatMemoryLog,
    owner: str,
    out: TextIO,
    *,
    on_conversation: _OnConversation | None = None,
) -> ExportReport:
    """Write everything stored of an owner as JSON Lines: what erasing them would delete.

    The conversations are those :func:`async_erase_owner` deletes: the owner's, each
    followed by the forks of it not written yet, recursively. Each message or event is one
    line,
    ``{"conversation_id": ..., "position": ..., "message": {...}}`` (the message as
    :func:`chatmem.encode_message` writes it), in the conversation's order; a conversation's
    summary follows its messages, ``{"conversation_id": ..., "summary": {"text": ...,
    "covers": ..., "version": ...}}``. Through an encrypted log the lines are in clear and
    its data keys never appear. Running it again on unchanged data writes the same lines.

    Example:
        ```python
        with open("alice.jsonl", "w", encoding="utf-8") as out:
            report = await async_export_owner(repository, "alice@example.com", out)
        ```

    Args:
        log: The repository (or an encrypted log over it).
        owner: The owner.
        out: A text stream to write to.
        on_conversation: Called with each of the owner's conversation ids once it and its
            forks are written (a progress bar).

    Returns:
        What was written.

    Raises:
        ConfigurationError: ``owner`` is empty.
    """
    checked_owner(owner)
    owned = await _owned(log, owner)
    tree = _Tree(log, owned)
    report = ExportReport()
    for root in owned:
        for conversation_id in await tree.parents_first(root):
            await _export_one(log, conversation_id, out, tree, report)
        if on_conversation is not None:
            on_conversation(root)
    return report


async def _export_one(
    log: AsyncChatMemoryLog,
    conversation_id: str,
    out: TextIO,
    tree: _Tree,
    report: ExportReport,
) -> None:
    written = 0
    after: Position | None = None
    while True:
        page = await log.find_history(conversation_id, after=after, limit=_PAGE)
        for stored in page:
            out.write(message_line(conversation_id, stored.position, stored.message))
        written += len(page)
        if len(page) < _PAGE:
            break
        after = page[-1].position
    summary = None
    if isinstance(log, AsyncSummaryStore):
        summary = await log.find_summary(conversation_id)
    if summary is not None:
        out.write(summary_line(conversation_id, summary))
        report.summaries += 1
    if written or summary is not None:
        if conversation_id in tree.owned:
            report.conversations += 1
        else:
            report.forks += 1
    report.messages += written


def _is_encrypted(log: object) -> bool:
    try:
        from chatmem._async.encrypted import AsyncEncryptedLog
    except ImportError:  # without the encryption extra nothing is encrypted
        return False
    return isinstance(log, AsyncEncryptedLog)


async def async_rotate_keys(
    log: AsyncEncryptedLog,
    *,
    concurrency: int = 1,
    on_conversation: _OnConversation | None = None,
) -> RotationReport:
    """Wrap every data key of every conversation by the current key-encryption key.

    Pages through every conversation and calls :meth:`AsyncEncryptedLog.rewrap` on each:
    messages are not rewritten, each data key gets one more stored copy wrapped by the
    current key. Run it after every process has the new key first in its key list (and
    the old ones after it); once it has finished, the old keys can be dropped. Safe to run
    beside writers, and again: a run after an interrupted one finishes the job, and a run
    with nothing left to do wraps nothing.

    Example:
        ```python
        keys = StaticKeyProvider.from_text(f"k2:{new_key},k1:{old_key}")
        log = AsyncEncryptedLog(repository, keys)
        report = await async_rotate_keys(log, concurrency=4)
        ```

    Args:
        log: The encrypted log.
        concurrency: How many conversations are rotated at once; their round trips overlap.
        on_conversation: Called with each conversation id once it is done (a progress bar).

    Returns:
        How many conversations were visited and data keys wrapped anew.

    Raises:
        ConfigurationError: ``log`` is not an encrypted log, or ``concurrency`` is below 1.
        KeyUnavailableError: A conversation's data key is wrapped only by a key the
            provider no longer has.
    """
    if not _is_encrypted(log):
        raise ConfigurationError(
            f"rotating keys needs an encrypted log, not {type(log).__name__}: open the "
            "repository with encryption on (?encryption=env in its URL, or the encrypted "
            "log over it with a key provider)"
        )
    checked_concurrency(concurrency)
    report = RotationReport()
    cursor: str | None = None
    while True:
        page = await log.list_conversations(limit=_PAGE, cursor=cursor)
        ids = page.conversation_ids
        for start in range(0, len(ids), concurrency):
            chunk = ids[start : start + concurrency]
            counts = await _run_all([partial(log.rewrap, c) for c in chunk])
            for conversation_id, rewrapped in zip(chunk, counts, strict=True):
                report.rewrapped += rewrapped
                report.conversations += 1
                if on_conversation is not None:
                    on_conversation(conversation_id)
        if page.next_cursor is None:
            return report
        cursor = page.next_cursor

"""The repository contract: Spring AI's four methods plus the log capabilities."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import ClassVar, Protocol, Self, runtime_checkable

from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._summaries import ConversationSummary
from chatmem.messages import Message, MessageType

__all__ = [
    "AsyncChatMemoryLog",
    "AsyncChatMemoryRepository",
    "AsyncOwnedChatMemoryLog",
    "AsyncServerInfo",
    "AsyncSessionLog",
    "AsyncSummaryStore",
    "AsyncWindowReader",
]


@runtime_checkable
class AsyncChatMemoryRepository(Protocol):
    """Stores conversations. The minimum a backend must implement.

    The storage layer is policy-free: it stores what it is given. Windows, system-message
    rules and tool pairing live in the chat memory. Implement these four methods and any
    chat memory works on top (reading whole conversations); implement
    :class:`AsyncChatMemoryLog` as well to make memory cost O(window).
    """

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all stored conversations, in no particular order."""
        ...

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]`` if it is unknown.

        Args:
            conversation_id: The conversation.
        """
        ...

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages, atomically where the store allows.

        Args:
            conversation_id: The conversation.
            messages: The new content, in order. An empty sequence deletes the conversation.
        """
        ...

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and everything stored with it. Unknown ids are not an error.

        Args:
            conversation_id: The conversation.
        """
        ...


@runtime_checkable
class AsyncChatMemoryLog(AsyncChatMemoryRepository, Protocol):
    """A repository that appends and answers bounded queries: what makes memory O(window).

    Every built-in backend implements it. Chat memories use it whenever a repository does.
    """

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        """Append messages atomically, each getting a new position.

        Concurrent appenders to one conversation never lose or duplicate a message. A message
        whose id is already stored in the conversation is skipped (idempotent retry).

        Args:
            conversation_id: The conversation; created on first append.
            messages: The messages, in order.

        Returns:
            The newly stored messages with their positions; skipped duplicates are left out.
        """
        ...

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` user, assistant and tool messages, oldest first.

        System messages and events are left out.

        Args:
            conversation_id: The conversation.
            limit: How many messages at most.
            before: Only messages positioned before this one (to page backwards).
        """
        ...

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the latest stored system message, or ``None``.

        Args:
            conversation_id: The conversation.
        """
        ...

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``.

        Args:
            conversation_id: The conversation.
            message_type: The type wanted.
        """
        ...

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of conversation ids, optionally only those of one owner.

        The owner of a conversation is the one encoded in its id by
        :func:`chatmem.conversation_ids.scoped_conversation_id`.

        Args:
            owner: Only conversations of this owner.
            limit: Page size.
            cursor: ``next_cursor`` of the previous page.
        """
        ...

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """Return a page of history matching every given filter, oldest first.

        Args:
            conversation_id: The conversation.
            since: Only messages created at or after this time.
            until: Only messages created before this time.
            types: Only messages of these types.
            text: Only messages whose searchable text (see
                :func:`chatmem.messages.searchable_text`) contains this, ignoring case.
            after: Only messages positioned after this one (to page forwards).
            limit: Page size.
        """
        ...

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete user, assistant and tool messages positioned before ``position``.

        System messages are kept, so the current one survives retention and eviction, and
        so are events.

        Args:
            conversation_id: The conversation.
            position: Messages before this one go.

        Returns:
            How many messages were deleted.
        """
        ...

    async def purge_expired(self) -> int:
        """Delete conversations whose time to live has passed.

        Expired conversations are already invisible to every read; this reclaims the space
        where the store has no native expiry.

        Returns:
            How many conversations were deleted (0 where the store expires data itself).
        """
        ...

    async def aclose(self) -> None:
        """Release the connections this repository owns (none if it was handed a client)."""
        ...


@runtime_checkable
class AsyncSessionLog(AsyncChatMemoryLog, Protocol):
    """A log with versions: what sessions (forks, rewinds, checked appends) are built on.

    Every built-in backend implements it. A conversation's *version* is an integer that
    grows with every append that stores something (any message or event) and is 0 for a
    conversation with nothing stored; it says nothing else (it need not count messages).
    Read it before reading a window or history, append with ``expected_version``, and the
    append stores nothing and raises :class:`~chatmem.exceptions.VersionConflictError`
    when anything was appended in between: of two writers at one version, one wins.

    Events (:class:`~chatmem.messages.EventMessage`) are stored like messages, but the
    window reads (``find_recent``, ``find_window``) leave them out as they leave out system
    messages, and ``delete_before`` and ``delete_between`` keep them.
    """

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages atomically, each getting a new position.

        Args:
            conversation_id: The conversation; created on first append.
            messages: The messages, in order.
            expected_version: Store only if the conversation is at this version (0: only if
                it holds nothing); ``None`` appends whatever the version.

        Returns:
            The newly stored messages with their positions; skipped duplicates are left out.

        Raises:
            VersionConflictError: The conversation is not at ``expected_version``; nothing
                was stored.
        """
        ...

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version: 0 if it holds nothing (or expired).

        Args:
            conversation_id: The conversation.
        """
        ...

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete the user, assistant and tool messages positioned in ``(after, through]``.

        System messages and events are kept. Used by a rewind, which first stores the
        messages it takes back as events.

        Args:
            conversation_id: The conversation.
            after: Messages after this position go; ``None`` from the start.
            through: Messages up to and including this position go.

        Returns:
            How many messages were deleted.
        """
        ...


@runtime_checkable
class AsyncOwnedChatMemoryLog(AsyncSessionLog, Protocol):
    """A log that its caller owns: close it with ``aclose``, or use it in ``async with``.

    The return type of the URL factories of ``chatmem_repositories``, one protocol per
    flavor. Every built-in backend is one; a third-party backend's factory should return one
    too (the conformance suite checks the log methods).
    """

    async def __aenter__(self) -> Self:
        """Return the repository itself."""
        ...

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the repository, as ``aclose`` does."""
        ...


@runtime_checkable
class AsyncWindowReader(Protocol):
    """Optional: read the system message and the newest messages in one round trip.

    Chat memories use it when a repository has it, so a memory read costs one round trip
    instead of two. The answer must equal ``find_system_message`` plus ``find_recent``.
    """

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the current system message and the newest ``limit`` chat messages.

        Chat messages are user, assistant and tool messages (as ``find_recent`` returns).

        Args:
            conversation_id: The conversation.
            limit: How many non-system messages at most, returned oldest first.
        """
        ...


@runtime_checkable
class AsyncMessageCounter(Protocol):
    """Optional: count a conversation's messages without reading them.

    ``chatmem migrate`` verifies each copied conversation with it when the destination has
    it (the store counts; nothing crosses the wire but a number), and reads the messages
    back otherwise. The answer must equal ``len(find_by_conversation_id(...))``.
    """

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds: 0 if it has none or expired.

        Args:
            conversation_id: The conversation.
        """
        ...


@runtime_checkable
class AsyncServerInfo(Protocol):
    """Optional: say which store a repository talks to, for diagnostics and telemetry.

    Every built-in backend implements it; ``chatmem doctor`` shows the version, and
    telemetry records ``db_system`` as ``db.system.name``.
    """

    db_system: ClassVar[str]
    """The OpenTelemetry ``db.system.name`` of the store, such as ``"cassandra"``."""

    async def server_version(self) -> str:
        """Return the server's product and version, such as ``"Apache Cassandra 5.0.2"``."""
        ...


@runtime_checkable
class AsyncSummaryStore(Protocol):
    """Optional: keep each conversation's running summary, with a version-checked write.

    A summarizing memory (:class:`~chatmem.memory.AsyncSummarizingChatMemory`) stores its
    summary here, so every process serving a conversation shares it and it survives
    restarts. The write is a compare-and-set on the version: of two processes that fold the
    same turns, only one wins, so no turn is folded twice and no update is lost. Deleting
    the conversation (``delete_by_conversation_id``) deletes its summary; ``save_all``
    leaves it alone. Without this capability a summarizing memory keeps the summary in
    process memory only.
    """

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the conversation's summary, or ``None`` if none was written.

        Args:
            conversation_id: The conversation.
        """
        ...

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version``.

        Args:
            conversation_id: The conversation.
            text: The new summary.
            covers: Position of the last message the summary covers.
            expected_version: The version read before summarizing; 0 when there was no
                summary.

        Returns:
            True if the write won (the stored version is now ``expected_version + 1``);
            False if another writer got there first (nothing was written).
        """
        ...

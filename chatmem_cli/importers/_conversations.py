"""What every importer yields, and appending it to a repository; no framework needed."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from chatmem.backend import run_in_order
from chatmem.exceptions import ChatMemError
from chatmem.messages import Message
from chatmem.repository import ChatMemoryLog, ChatMemoryRepository

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "SourceError",
    "import_conversations",
    "stable_id",
]

_NAMESPACE = uuid.UUID("6f1c3a52-7d0e-4f43-9b7e-2f0b8f0c1a11")
_NAMESPACE_BYTES = _NAMESPACE.bytes
_PAGE = 500


class SourceError(ChatMemError, ValueError):
    """A source of conversations cannot be read as asked.

    Raised for an unknown source kind, an option the source does not take, a table or key
    that is not there, or stored data that is not what the source writes. Nothing is written
    for the conversation being read when it is raised.
    """


def stable_id(source: str, session: str, key: object) -> str:
    """Return the id of a message that its source stored without one (a UUIDv5).

    Args:
        source: The source kind and place, such as ``"langchain-sql:message_store"``.
        session: The session the message belongs to.
        key: Where the message is in the session (a row id or an index).
    """
    # uuid.uuid5's value, computed without building UUID objects (an import derives many).
    digest = bytearray(
        hashlib.sha1(_NAMESPACE_BYTES + f"{source}\n{session}\n{key}".encode()).digest()
    )
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest[:16].hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


class ImportedConversation:
    """One conversation read from a source.

    A reader may defer converting the messages (:meth:`deferred`): the ids they will get are
    known at once, so an import that finds them all stored converts nothing.
    """

    __slots__ = ("_convert", "_ids", "_messages", "conversation_id", "left_out")

    conversation_id: str
    """The source's session id."""
    left_out: int
    """Stored messages the source kept too little of to import (see each source)."""

    def __init__(
        self, conversation_id: str, messages: Sequence[Message] = (), left_out: int = 0
    ) -> None:
        """Hold converted messages.

        Args:
            conversation_id: The source's session id.
            messages: Its messages, oldest first, with stable ids.
            left_out: Stored messages the source kept too little of to import.
        """
        self.conversation_id = conversation_id
        self.left_out = left_out
        self._messages: list[Message] | None = list(messages)
        self._ids: list[str] | None = None
        self._convert: Callable[[], list[Message]] | None = None

    @classmethod
    def deferred(
        cls,
        conversation_id: str,
        ids: Sequence[str],
        convert: Callable[[], list[Message]],
        left_out: int = 0,
    ) -> ImportedConversation:
        """Hold messages converted only when asked for.

        Args:
            conversation_id: The source's session id.
            ids: The ids its messages get, in order, known without converting them.
            convert: Returns the messages, oldest first; called at most once.
            left_out: Stored messages the source kept too little of to import.
        """
        conversation = cls(conversation_id, (), left_out)
        conversation._messages = None
        conversation._ids = list(ids)
        conversation._convert = convert
        return conversation

    @property
    def messages(self) -> list[Message]:
        """Its messages, oldest first, with stable ids (converted on first use)."""
        if self._messages is None:
            assert self._convert is not None
            self._messages = self._convert()
            self._convert = None
        return self._messages

    @property
    def message_ids(self) -> list[str]:
        """The ids of its messages, in order, without converting them."""
        if self._messages is not None:
            return [message.id for message in self._messages]
        assert self._ids is not None
        return self._ids

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ImportedConversation):
            return NotImplemented
        return (self.conversation_id, self.messages, self.left_out) == (
            other.conversation_id,
            other.messages,
            other.left_out,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        held = "deferred" if self._messages is None else f"{len(self._messages)} message(s)"
        return (
            f"ImportedConversation(conversation_id={self.conversation_id!r}, {held}, "
            f"left_out={self.left_out})"
        )


@dataclass(frozen=True)
class ImportReport:
    """What :func:`import_conversations` did."""

    conversations: int
    """Conversations read."""
    messages_read: int
    """Messages read."""
    messages_stored: int
    """Messages newly stored (0 when everything was imported before)."""
    left_out: int = 0
    """Messages the source kept too little of to import."""
    conversations_skipped: int = 0
    """Conversations whose every message the destination already held (nothing appended)."""
    mismatches: tuple[str, ...] = ()
    """One line per conversation whose messages are not all in the destination after the
    import (only with ``verify``)."""


def _stored_ids(repository: ChatMemoryLog, conversation_id: str) -> list[str]:
    """Return the ids of a conversation's stored messages, a page per round trip."""
    ids: list[str] = []
    after = None
    while True:
        page = repository.find_history(conversation_id, after=after, limit=_PAGE)
        ids.extend(stored.message.id for stored in page)
        if len(page) < _PAGE:
            return ids
        after = page[-1].position


@dataclass
class _Outcome:
    """What importing one conversation did."""

    stored: int = 0
    skipped: bool = False
    mismatch: str | None = None


def _import_one(
    conversation: ImportedConversation,
    repository: ChatMemoryLog,
    *,
    verify: bool,
    batch_size: int,
) -> _Outcome:
    """Append the messages of one conversation that the destination does not hold yet.

    The ids are compared before anything is converted: a conversation held whole costs one
    read and no conversion; one held in part (an interrupted run) converts and appends only
    what is missing, in the source's order.
    """
    ids = conversation.message_ids
    if not ids:
        return _Outcome()
    conversation_id = conversation.conversation_id
    held = set(_stored_ids(repository, conversation_id))
    missing = sum(1 for message_id in ids if message_id not in held)
    if not missing:
        return _Outcome(skipped=True)
    messages = conversation.messages
    if missing < len(messages):
        messages = [message for message in messages if message.id not in held]
    outcome = _Outcome()
    for start in range(0, len(messages), batch_size):
        batch = messages[start : start + batch_size]
        outcome.stored += len(repository.append(conversation_id, batch))
    if verify:
        held = set(_stored_ids(repository, conversation_id))
        absent = sum(1 for message_id in ids if message_id not in held)
        if absent:
            outcome.mismatch = (
                f"{conversation_id!r}: {absent} of {len(ids)} message(s) are not in the destination"
            )
    return outcome


def import_conversations(
    conversations: Iterable[ImportedConversation],
    repository: ChatMemoryRepository,
    *,
    verify: bool = False,
    batch_size: int = _PAGE,
    concurrency: int = 1,
    on_conversation: Callable[[ImportedConversation, int], object] | None = None,
) -> ImportReport:
    """Append imported conversations to a repository; running it again stores nothing.

    Before appending a conversation its stored message ids are read (a page per round trip)
    and compared with the ids its messages get, which the readers know before converting
    them: a conversation whose every message is already stored is skipped without converting
    or appending, so a re-run costs one read per conversation. Otherwise the messages not
    yet stored are appended in batches, in the source's order; the repository also skips
    ids it already holds, so an interrupted run is resumed by running it again and stores
    each message once.

    Args:
        conversations: What a source function (or :func:`chatmem_cli.importers.sources.read_source`)
            yields.
        repository: A chatmem repository with the log capabilities (every built-in backend).
        verify: Read each appended conversation back and check that every message id is
            stored; a shortfall is reported in :attr:`ImportReport.mismatches`.
        batch_size: Messages per append.
        concurrency: Conversations imported at once, each on a thread of its own (their
            round trips overlap); the repository must be safe to share between threads, as
            every built-in backend is. 1 imports one conversation after another.
        on_conversation: Called with each conversation and the number of messages newly
            stored for it, once it is done, in the source's order (drives a progress bar).

    Raises:
        TypeError: If the repository cannot append.
        ValueError: If ``batch_size`` or ``concurrency`` is below 1.
    """
    if not isinstance(repository, ChatMemoryLog):
        raise TypeError("importing needs a repository that appends (a ChatMemoryLog)")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    count = read = stored = left_out = skipped = 0
    mismatches: list[str] = []

    def done(conversation: ImportedConversation, outcome: _Outcome) -> None:
        nonlocal count, read, stored, left_out, skipped
        count += 1
        read += len(conversation.message_ids)
        left_out += conversation.left_out
        stored += outcome.stored
        skipped += outcome.skipped
        if outcome.mismatch is not None:
            mismatches.append(outcome.mismatch)
        if on_conversation is not None:
            on_conversation(conversation, outcome.stored)

    run_in_order(
        conversations,
        lambda conversation: _import_one(
            conversation, repository, verify=verify, batch_size=batch_size
        ),
        done,
        workers=concurrency,
        # One conversation given twice is imported in order, never twice at once.
        key=lambda conversation: conversation.conversation_id,
    )
    return ImportReport(count, read, stored, left_out, skipped, tuple(mismatches))

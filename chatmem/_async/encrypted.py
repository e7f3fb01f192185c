"""A session log that encrypts what it stores: envelope encryption over any repository."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Self

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from chatmem._async.repository import (
    AsyncMessageCounter,
    AsyncOwnedChatMemoryLog,
    AsyncServerInfo,
    AsyncSummaryStore,
    AsyncWindowReader,
)
from chatmem._keys import KeyProvider, KeyUnavailableError
from chatmem._sealing import (
    DEFAULT_SEARCH_SCAN_LIMIT,
    DataKey,
    EncryptedSearchLimitError,
    is_data_key_event,
    new_data_key,
    open_message,
    open_summary,
    read_data_key_event,
    rewrapped,
    seal_message,
    seal_summary,
    sealed_key_id,
    summary_key_id,
)
from chatmem._summaries import ConversationSummary
from chatmem.backend import (
    AsyncLock,
    ConversationPage,
    Position,
    StoredMessage,
    check_limit,
    matches_history_filters,
)
from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.messages import EventMessage, Message, MessageType

__all__ = ["AsyncEncryptedLog"]

_PAGE = 500  # messages per read when the log pages on the caller's behalf
_CACHED_CONVERSATIONS = 10_000  # conversations whose unwrapped data keys stay cached


class _Keys:
    """One conversation's data keys: those that open its messages, and the one that seals."""

    __slots__ = ("ciphers", "locked", "raw", "sealing")

    def __init__(self) -> None:
        self.ciphers: dict[str, AESGCM] = {}
        self.raw: dict[str, bytes] = {}
        self.sealing: DataKey | None = None
        self.locked: dict[str, KeyUnavailableError] = {}  # stored, but no configured key unwraps


class AsyncEncryptedLog:
    """Wraps a session log so that what it stores is encrypted, and reads decrypt.

    Envelope encryption: each conversation's content is sealed with its own data key
    (AES-256-GCM), which is stored in the conversation wrapped by a key-encryption key from
    ``keys``. Ids, positions, creation times, message types, event types and owners stay in
    clear, so windows, paging, retention and expiry work unchanged on every backend. Messages
    stored before encryption was turned on read as they are. Deleting a conversation deletes
    its data keys (crypto-shredding). Text search reads the conversation on the client, at
    most ``search_scan_limit`` messages per call.

    Example:
        ```python
        keys = StaticKeyProvider.from_text(f"k1:{generate_key()}")
        log = AsyncEncryptedLog(AsyncInMemoryChatMemoryRepository(), keys)
        await log.append("chat-1", [UserMessage(text="my card is 4111...")])
        recent = await log.find_recent("chat-1", 10)  # opened: the text as written
        # On any backend by URL instead: "...?encryption=env"
        ```

    Args:
        repository: The log that stores the sealed messages; this log owns it (closing this
            closes it).
        keys: The key provider whose current key wraps new data keys.
        search_scan_limit: The most messages one text search reads.

    Raises:
        ConfigurationError: ``keys`` is not a key provider.
    """

    def __init__(
        self,
        repository: AsyncOwnedChatMemoryLog,
        keys: KeyProvider,
        *,
        search_scan_limit: int = DEFAULT_SEARCH_SCAN_LIMIT,
    ) -> None:
        if not isinstance(keys, KeyProvider):
            raise ConfigurationError(f"keys must be a KeyProvider, got {type(keys).__name__}")
        self.repository = repository
        """The log underneath, which stores sealed messages."""
        self.keys = keys
        """The key provider."""
        self.search_scan_limit = check_limit(search_scan_limit)
        self.db_system: str = getattr(repository, "db_system", "other")
        self._conversations: OrderedDict[str, _Keys] = OrderedDict()
        self._lock = AsyncLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.repository!r})"

    # -- keys -------------------------------------------------------------------------------

    def _cached(self, conversation_id: str) -> _Keys | None:
        found = self._conversations.get(conversation_id)
        if found is not None:
            # The sync twin's threads read the cache without the lock: another thread may
            # drop this entry between the two calls (the keys found stay valid).
            with contextlib.suppress(KeyError):
                self._conversations.move_to_end(conversation_id)
        return found

    async def data_key_events(self, conversation_id: str) -> list[EventMessage]:
        """Return the conversation's stored data keys (wrapped), oldest first.

        Args:
            conversation_id: The conversation.
        """
        found: list[EventMessage] = []
        after: Position | None = None
        while True:
            page = await self.repository.find_history(
                conversation_id,
                # Events only, matched here: a text filter would make some stores (Redis)
                # scan every message of the conversation, where events have an index.
                types=[MessageType.EVENT],
                after=after,
                limit=_PAGE,
            )
            found += [
                s.message
                for s in page
                if isinstance(s.message, EventMessage) and is_data_key_event(s.message)
            ]
            if len(page) < _PAGE:
                return found
            after = page[-1].position

    async def _load(self, conversation_id: str) -> _Keys:
        keys = self._cached(conversation_id)
        if keys is not None:
            return keys
        keys = _Keys()
        for event in await self.data_key_events(conversation_id):
            data_key_id, wrapped = read_data_key_event(event)
            try:
                raw = self.keys.unwrap(wrapped)
            except KeyUnavailableError as exc:
                # A retired key-encryption key: another event may wrap it anew.
                if data_key_id not in keys.raw:
                    keys.locked[data_key_id] = exc
                continue
            keys.locked.pop(data_key_id, None)
            keys.raw[data_key_id] = raw
            keys.ciphers[data_key_id] = AESGCM(raw)
            if wrapped.key_id == self.keys.current_key_id:
                keys.sealing = DataKey(data_key_id, raw, keys.ciphers[data_key_id], event)
        self._conversations[conversation_id] = keys
        while len(self._conversations) > _CACHED_CONVERSATIONS:
            self._conversations.popitem(last=False)
        return keys

    async def _sealing_key(self, conversation_id: str) -> DataKey:
        keys = self._cached(conversation_id)
        sealing = None if keys is None else keys.sealing
        if sealing is not None and sealing.event.payload["key_id"] == self.keys.current_key_id:
            return sealing
        async with self._lock:
            keys = await self._load(conversation_id)
            current = keys.sealing
            if current is None or current.event.payload["key_id"] != self.keys.current_key_id:
                if keys.raw:  # the newest data key, wrapped by the current key
                    data_key_id, raw = list(keys.raw.items())[-1]
                    current = rewrapped(raw, data_key_id, self.keys)
                else:
                    current = new_data_key(self.keys)
                keys.raw[current.data_key_id] = current.raw
                keys.ciphers[current.data_key_id] = current.cipher
                keys.sealing = current
            return current

    async def sealing_key(self, conversation_id: str) -> DataKey:
        """Return the data key that seals new content of the conversation, stored in it.

        For content kept outside the conversation (its summary, an
        ``AsyncEncryptedVectorStore``'s documents): a data key the conversation does
        not store yet is appended to it first (creating the conversation if it has no
        message), so whatever it seals opens as long as the conversation exists, and
        deleting the conversation shreds it.

        Args:
            conversation_id: The conversation.
        """
        key = await self._sealing_key(conversation_id)
        if key.event.id not in {e.id for e in await self.data_key_events(conversation_id)}:
            await self.repository.append(conversation_id, [key.event])
        return key

    async def _find_cipher(
        self, conversation_id: str, data_key_id: str
    ) -> tuple[_Keys, AESGCM | None]:
        keys = self._cached(conversation_id)
        if keys is None or data_key_id not in keys.ciphers:
            async with self._lock:
                self._conversations.pop(conversation_id, None)
                keys = await self._load(conversation_id)
        return keys, keys.ciphers.get(data_key_id)

    async def opening_cipher(self, conversation_id: str, data_key_id: str) -> AESGCM | None:
        """Return the cipher of one of the conversation's data keys, or ``None`` if it is gone.

        ``None`` means the conversation does not store that data key: it was deleted (or
        never written), and what the key sealed is shredded.

        Args:
            conversation_id: The conversation.
            data_key_id: The data key's id, as a sealed value names it.

        Raises:
            KeyUnavailableError: The conversation stores the data key, but only wrapped by
                key-encryption keys the key provider does not hold.
        """
        keys, cipher = await self._find_cipher(conversation_id, data_key_id)
        locked = keys.locked.get(data_key_id)
        if cipher is None and locked is not None:
            raise KeyUnavailableError(
                f"conversation {conversation_id!r}: data key {data_key_id!r} is wrapped only "
                f"by keys the key provider does not hold ({locked.key_id!r})",
                key_id=locked.key_id,
            )
        return cipher

    async def _cipher(self, conversation_id: str, data_key_id: str) -> AESGCM:
        _, cipher = await self._find_cipher(conversation_id, data_key_id)
        if cipher is None:
            raise MessageDecodeError(
                f"conversation {conversation_id!r} holds a message sealed with data key "
                f"{data_key_id!r}, which it does not store or no configured key unwraps",
                conversation_id=conversation_id,
            )
        return cipher

    async def _open(self, conversation_id: str, message: Message) -> Message:
        data_key_id = sealed_key_id(message)
        if data_key_id is None:
            return message  # stored before encryption was turned on
        cipher = await self._cipher(conversation_id, data_key_id)
        return open_message(message, conversation_id, cipher)

    async def _open_all(
        self, conversation_id: str, stored: Sequence[StoredMessage]
    ) -> list[StoredMessage]:
        return [
            StoredMessage(s.position, await self._open(conversation_id, s.message))
            for s in stored
            if not is_data_key_event(s.message)
        ]

    async def _seal_all(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> tuple[list[Message], dict[str, Message]]:
        key = await self._sealing_key(conversation_id)
        originals: dict[str, Message] = {}
        for message in messages:
            originals.setdefault(message.id, message)
        sealed = [seal_message(m, conversation_id, key) for m in originals.values()]
        # Every write carries its data key: stored once (appends skip an id already
        # stored), and stored again if the conversation was deleted meanwhile, so no
        # message is ever stored without the key that opens it.
        return [key.event, *sealed], originals

    # -- writes -----------------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Seal and append messages; see :meth:`AsyncSessionLog.append`.

        Args:
            conversation_id: The conversation.
            messages: The messages, in order.
            expected_version: Store only at this version.
        """
        if not messages:
            return await self.repository.append(
                conversation_id, [], expected_version=expected_version
            )
        batch, originals = await self._seal_all(conversation_id, messages)
        stored = await self.repository.append(
            conversation_id, batch, expected_version=expected_version
        )
        return [
            StoredMessage(s.position, originals[s.message.id])
            for s in stored
            if not is_data_key_event(s.message)
        ]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the conversation's messages with sealed ones.

        Args:
            conversation_id: The conversation.
            messages: The new messages.
        """
        if not messages:
            await self.repository.save_all(conversation_id, [])
            return
        batch, _ = await self._seal_all(conversation_id, messages)
        await self.repository.save_all(conversation_id, batch)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete the conversation, its data keys with it.

        Args:
            conversation_id: The conversation.
        """
        await self.repository.delete_by_conversation_id(conversation_id)
        self._conversations.pop(conversation_id, None)

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete chat messages before ``position``; see the log protocol.

        Args:
            conversation_id: The conversation.
            position: Messages before this one go.
        """
        return await self.repository.delete_before(conversation_id, position)

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete chat messages in ``(after, through]``; see the session log protocol.

        Args:
            conversation_id: The conversation.
            after: Messages after this position go; ``None`` from the start.
            through: Messages up to and including this position go.
        """
        return await self.repository.delete_between(conversation_id, after, through)

    async def purge_expired(self) -> int:
        """Delete expired conversations (their keys with them)."""
        return await self.repository.purge_expired()

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Seal and write the summary; see :class:`AsyncSummaryStore`.

        Args:
            conversation_id: The conversation.
            text: The new summary.
            covers: Position of the last message the summary covers.
            expected_version: The version read before summarizing.

        Returns:
            True if the write won; False if another writer got there first, or the
            conversation holds nothing (deleted or expired): a summary is kept only with
            its conversation, so none is written and no data key is stored for it.
        """
        store = self._summaries()
        key = await self._sealing_key(conversation_id)
        if key.event.id not in {e.id for e in await self.data_key_events(conversation_id)}:
            # Storing the key would create the conversation again, with the summary of
            # the one deleted (and a data key that deletion shredded) in it.
            if await self.repository.find_version(conversation_id) == 0:
                return False
            await self.repository.append(conversation_id, [key.event])
        sealed = seal_summary(text, conversation_id, key)
        return await store.save_summary(
            conversation_id, sealed, covers, expected_version=expected_version
        )

    # -- reads ------------------------------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return every conversation id."""
        return await self.repository.find_conversation_ids()

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of conversation ids; see the log protocol.

        Args:
            owner: Only conversations of this owner.
            limit: Page size.
            cursor: ``next_cursor`` of the previous page.
        """
        return await self.repository.list_conversations(owner=owner, limit=limit, cursor=cursor)

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return every message and event, opened, oldest first.

        Args:
            conversation_id: The conversation.
        """
        return [
            await self._open(conversation_id, m)
            for m in await self.repository.find_by_conversation_id(conversation_id)
            if not is_data_key_event(m)
        ]

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest chat messages, opened; see the log protocol.

        Args:
            conversation_id: The conversation.
            limit: How many at most.
            before: Only messages positioned before this one.
        """
        found = await self.repository.find_recent(conversation_id, limit, before=before)
        return await self._open_all(conversation_id, found)

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the system message and the newest chat messages, opened.

        Args:
            conversation_id: The conversation.
            limit: How many chat messages at most.
        """
        if isinstance(self.repository, AsyncWindowReader):
            system, recent = await self.repository.find_window(conversation_id, limit)
        else:
            system = await self.repository.find_system_message(conversation_id)
            recent = await self.repository.find_recent(conversation_id, limit)
        opened = await self._open_all(conversation_id, [] if system is None else [system])
        return (opened[0] if opened else None), await self._open_all(conversation_id, recent)

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the current system message, opened, or ``None``.

        Args:
            conversation_id: The conversation.
        """
        found = await self.repository.find_system_message(conversation_id)
        return None if found is None else (await self._open_all(conversation_id, [found]))[0]

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, opened, or ``None``.

        Args:
            conversation_id: The conversation.
            message_type: The type wanted.
        """
        found = await self.repository.find_latest(conversation_id, message_type)
        if found is not None and is_data_key_event(found.message):
            # The newest event is a data key: the newest other event is found by reading
            # the events (data keys are written with a conversation's first write, a
            # rotation and a write after a deletion: they are few).
            events = await self.find_history(conversation_id, types=[message_type], limit=_PAGE)
            newest = events[-1] if events else None
            while len(events) == _PAGE:
                events = await self.find_history(
                    conversation_id, types=[message_type], after=events[-1].position, limit=_PAGE
                )
                newest = events[-1] if events else newest
            return newest
        return None if found is None else (await self._open_all(conversation_id, [found]))[0]

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
        """Return a page of history, opened; see the log protocol.

        A text search reads the conversation page by page and searches on the client (the
        store holds ciphertext), at most ``search_scan_limit`` messages per call.

        Args:
            conversation_id: The conversation.
            since: Only messages created at or after this time.
            until: Only messages created before this time.
            types: Only messages of these types.
            text: Only messages whose searchable text contains this, ignoring case.
            after: Only messages positioned after this one.
            limit: Page size.

        Raises:
            EncryptedSearchLimitError: A text search read ``search_scan_limit`` messages
                without filling the page.
        """
        check_limit(limit)
        found: list[StoredMessage] = []
        scanned = 0
        while len(found) < limit:
            want = _PAGE if text is not None else limit - len(found)
            page = await self.repository.find_history(
                conversation_id, since=since, until=until, types=types, after=after, limit=want
            )
            scanned += len(page)
            for stored in await self._open_all(conversation_id, page):
                if text is None or matches_history_filters(stored.message, None, None, None, text):
                    found.append(stored)
            if len(page) < want:
                break
            after = page[-1].position
            if text is not None and scanned >= self.search_scan_limit and len(found) < limit:
                raise EncryptedSearchLimitError(
                    f"searching encrypted conversation {conversation_id!r} read "
                    f"{scanned} messages without filling the page: narrow the search "
                    "(since, until, types, after) or raise search_scan_limit"
                )
        return found[:limit]

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version; see the session log protocol.

        Args:
            conversation_id: The conversation.
        """
        return await self.repository.find_version(conversation_id)

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages and events the conversation holds (data keys aside).

        Args:
            conversation_id: The conversation.
        """
        if not isinstance(self.repository, AsyncMessageCounter):
            return len(await self.find_by_conversation_id(conversation_id))
        total = await self.repository.count_messages(conversation_id)
        return total - len(await self.data_key_events(conversation_id)) if total else 0

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the conversation's summary, opened, or ``None``.

        Args:
            conversation_id: The conversation.
        """
        found = await self._summaries().find_summary(conversation_id)
        if found is None:
            return None
        data_key_id = summary_key_id(found.text)
        if data_key_id is None:
            return found
        cipher = await self._cipher(conversation_id, data_key_id)
        text = open_summary(found.text, conversation_id, cipher)
        return ConversationSummary(text, found.covers, found.version)

    async def server_version(self) -> str:
        """Return the store's product and version."""
        if isinstance(self.repository, AsyncServerInfo):
            return await self.repository.server_version()
        return "unknown"

    def _summaries(self) -> AsyncSummaryStore:
        if not isinstance(self.repository, AsyncSummaryStore):
            raise ConfigurationError(f"{self.repository!r} keeps no summaries")
        return self.repository

    # -- rotation ---------------------------------------------------------------------------

    async def rewrap(self, conversation_id: str) -> int:
        """Wrap every data key of the conversation by the current key-encryption key.

        Messages are not rewritten: each data key gets one more stored event, wrapped by
        the current key. Safe to repeat (a key already wrapped by it is skipped) and to
        run beside writers.

        Args:
            conversation_id: The conversation.

        Returns:
            How many data keys were wrapped anew.
        """
        self._conversations.pop(conversation_id, None)
        events = await self.data_key_events(conversation_id)
        current = self.keys.current_key_id
        done = {read_data_key_event(e)[0] for e in events if e.payload["key_id"] == current}
        added: list[EventMessage] = []
        missing: dict[str, KeyUnavailableError] = {}
        for event in events:
            data_key_id, wrapped = read_data_key_event(event)
            if data_key_id in done:
                continue
            try:
                raw = self.keys.unwrap(wrapped)
            except KeyUnavailableError as exc:
                missing[data_key_id] = exc  # another event may wrap it by a key still held
                continue
            missing.pop(data_key_id, None)
            done.add(data_key_id)
            added.append(rewrapped(raw, data_key_id, self.keys).event)
        if missing:
            first = next(iter(missing.values()))
            raise KeyUnavailableError(
                f"conversation {conversation_id!r}: {len(missing)} data key(s) are wrapped "
                f"only by retired keys ({first.key_id!r}): configure the retired key "
                "again to rotate them",
                key_id=first.key_id,
            )
        if added:
            await self.repository.append(conversation_id, added)
            self._conversations.pop(conversation_id, None)
        return len(added)

    # -- lifecycle --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the log underneath."""
        await self.repository.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

"""Documents and filters of the MongoDB layout (no I/O), shared by both twins.

Two collections:

``<prefix>messages``: one document per message::

    {conversation_id, gen, position, message_id, type, created_us, text, data, expires_at, batch}

``data`` is the message encoded by :func:`chatmem.messages.encode_message` (the JSON text is
the record of truth); the other fields exist for queries. ``created_us`` is microseconds since
the epoch, exact where a BSON date would round to milliseconds. ``text`` is the searchable
text. ``gen`` names the life of the conversation the message belongs to (see below).
``expires_at`` (only with a TTL) is the expiry the append that wrote the message set on the
conversation: it tells messages written since a conversation expired from the dead ones even
when the conversation document is gone (see :func:`live` and :func:`dead`). ``batch`` (only
on messages appended together with others) is ``{id, first, size, system, events}``: the
messages one insert wrote, at positions ``first`` to ``first + size - 1``; ``system`` and
``events`` list the offsets of the system messages and of the events among them, when there
are any (windows show neither). Reads show a batch only whole (see :func:`whole_batches`).

``<prefix>conversations``: one document per conversation::

    {_id: conversation_id, owner, gen, last_position, updated_at, expires_at, deleted_through}

``last_position`` is the position counter (``$inc`` reserves a block of positions);
``expires_at`` the stored expiry when a TTL is configured. The unique indexes, not the
counter, are what make positions and message ids unique: FerretDB 1.24 applies concurrent
updates of one document without isolation (some ``$inc`` are lost), so a writer that finds its
position taken moves on past the newest stored one. The current system message is the newest
``type: "system"`` document, found through the ``(conversation_id, type, position)`` index
rather than kept in the conversation document by a conditional update, which FerretDB could
apply out of order. ``gen`` is set once when the document is created; messages left behind by
a previous life of the same id (after a native TTL index removed the conversation document, or
a delete raced an append) have another ``gen``: the next creation deletes the dead ones and
takes the live ones into its life.

Events (``type: "event"``) are stored like every message; windows leave them out as they leave
out system messages (:data:`UNWINDOWED`), and the deletes keep both. A conversation's version
(:func:`version_of`) is its newest stored position, or ``deleted_through`` when that is higher:
``delete_between`` records there the newest position it deleted (the field is absent on
conversations it never ran on), so a delete never takes the version back and no position is
handed out twice by a version-checked append.

Servers without TTL indexes (FerretDB 1.24) apply a conditional delete as a read followed by a
delete by ``_id``, so ``purge_expired`` can delete a conversation document that an append
revived or created just after the purge read it. Appends there check their conversation
document after inserting, purges check for live messages after deleting, and whichever comes
second puts the document back; see ``AsyncExpiry.restore``.

Batches without transactions: a batch is written by one ordered ``insert_many`` at consecutive
positions, which FerretDB applies in one SQLite transaction and MongoDB in one storage
transaction (up to ``internalInsertMaxBatchSize`` documents, 64 or 500 by version, and 256 KB).
Nothing writes a batch in parts: what an insert stopped by a duplicate key stored is deleted
again and the batch written anew, whole. Part of a batch can still be left (MongoDB's
multi-document deletes yield between documents; an insert that fails part-way leaves its first
documents), so reads hide any batch that is not whole.
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId

from chatmem.backend import Position, StoredMessage, epoch_micros
from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.messages import Message, MessageType, decode_message, encode_message, searchable_text

from ._errors import BACKEND

__all__ = [
    "UNWINDOWED",
    "batch_documents",
    "check_position",
    "count_pipeline",
    "counted_messages",
    "dead",
    "history_filter",
    "is_dead",
    "is_expired",
    "live",
    "message_document",
    "partial_batches",
    "regex_literal",
    "server_product",
    "stored_from_document",
    "version_of",
    "whole_batches",
]

UNWINDOWED = [MessageType.SYSTEM.value, MessageType.EVENT.value]
"""The stored types windows leave out and the deletes keep: system messages and events."""

_NUL_STAND_IN = "\ufffd"  # FerretDB rejects NUL inside strings; only the search copy needs it


def searchable(message: Message) -> str:
    """The text stored for ``find_history(text=...)``."""
    return searchable_text(message).replace("\x00", _NUL_STAND_IN)


def message_document(
    conversation_id: str,
    gen: Any,
    position: int,
    message: Message,
    *,
    expires_at: datetime | None = None,
    batch: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the stored document of one message; ``expires_at`` and ``batch`` only when given."""
    document: dict[str, Any] = {
        "conversation_id": conversation_id,
        "gen": gen,
        "position": position,
        "message_id": message.id,
        "type": message.type.value,
        "created_us": epoch_micros(message.created_at),
        "text": searchable(message),
        "data": encode_message(message),
    }
    if expires_at is not None:
        document["expires_at"] = expires_at
    if batch is not None:
        document["batch"] = batch
    return document


def batch_documents(
    conversation_id: str,
    gen: Any,
    first: int,
    messages: Sequence[Message],
    *,
    expires_at: datetime | None = None,
) -> list[dict[str, Any]]:
    """Build the documents of one insert, at consecutive positions from ``first``.

    Several messages are tagged as one batch (a fresh id per insert, so the documents of two
    inserts never count as one batch); a lone message is whole whenever it is there. The tag
    lists the offsets of the batch's system messages and events, which windows do not read.
    """
    tag: dict[str, Any] | None = None
    if len(messages) > 1:
        tag = {"id": ObjectId(), "first": first, "size": len(messages)}
        for key, kind in (("system", MessageType.SYSTEM), ("events", MessageType.EVENT)):
            offsets = [i for i, m in enumerate(messages) if m.type is kind]
            if offsets:
                tag[key] = offsets
    return [
        message_document(conversation_id, gen, first + i, m, expires_at=expires_at, batch=tag)
        for i, m in enumerate(messages)
    ]


def whole_batches(
    documents: Sequence[dict[str, Any]],
    *,
    low: float = -math.inf,
    high: float = math.inf,
    chat_only: bool = False,
) -> list[dict[str, Any]]:
    """Drop the documents of batches that are not whole, keeping the order.

    The documents are what a read found at positions ``low`` to ``high`` (every one there,
    but system messages and events when ``chat_only``). A batch is whole when every member it has in
    that range is among them: positions outside it are another page, or the part of the
    batch a full window cuts off at its far end.
    """
    shown: dict[Any, set[int]] = {}
    for document in documents:
        tag = document.get("batch")
        if tag is not None:
            shown.setdefault(tag["id"], set()).add(int(document["position"]))
    broken = set()
    for document in documents:
        tag = document.get("batch")
        if tag is None or tag["id"] in broken:
            continue
        skipped = {*tag.get("system", ()), *tag.get("events", ())} if chat_only else set()
        first = int(tag["first"])
        wanted = {
            first + offset
            for offset in range(int(tag["size"]))
            if offset not in skipped and low <= first + offset <= high
        }
        if not wanted <= shown[tag["id"]]:
            broken.add(tag["id"])
    return [d for d in documents if d.get("batch") is None or d["batch"]["id"] not in broken]


def count_pipeline(scope: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``aggregate`` pipeline that counts the messages of ``scope`` by batch.

    The server groups the messages by batch (their number in each), then the batches by
    ``(size, number)``, so the answer is a few rows however long the history: one for the
    messages appended alone (no size), one per size and count of members found. FerretDB
    1.24 cannot compare two fields in a pipeline, so :func:`counted_messages` keeps the
    whole batches.
    """
    return [
        {"$match": scope},
        {"$group": {"_id": {"id": "$batch.id", "size": "$batch.size"}, "n": {"$sum": 1}}},
        {"$group": {"_id": {"size": "$_id.size", "n": "$n"}, "batches": {"$sum": 1}}},
    ]


def counted_messages(rows: Sequence[dict[str, Any]]) -> int:
    """How many messages a read of the whole scope shows, from :func:`count_pipeline`'s rows.

    A batch shows when every member is there, as :func:`whole_batches` decides it: positions
    are unique in a conversation and a batch's members lie at its ``size`` consecutive
    positions, so it is whole when it has ``size`` members.
    """
    total = 0
    for row in rows:
        size, members = row["_id"].get("size"), int(row["_id"]["n"])
        if size is None or members >= int(size):
            total += members * int(row["batches"])
    return total


def partial_batches(documents: Sequence[dict[str, Any]]) -> dict[Any, int]:
    """Return ``{batch id: size}`` of the batches with fewer members here than their size."""
    sizes = {d["batch"]["id"]: int(d["batch"]["size"]) for d in documents if d.get("batch")}
    counts = Counter(d["batch"]["id"] for d in documents if d.get("batch"))
    return {key: size for key, size in sizes.items() if counts[key] < size}


def live(now: datetime) -> dict[str, Any]:
    """Filter for messages written less than a TTL before ``now``."""
    return {"expires_at": {"$gt": now}}


def dead(now: datetime) -> dict[str, Any]:
    """Filter for messages whose own expiry has passed, or that have none.

    Messages without one were written with no TTL configured (or by an older chatmem); they
    can only be leftovers, never part of a life that is still being written with a TTL.
    """
    return {"expires_at": {"$not": {"$gt": now}}}


def is_dead(document: dict[str, Any], now: datetime) -> bool:
    """Tell whether a message document matches :func:`dead`."""
    expires_at = document.get("expires_at")
    if expires_at is None:
        return True
    if expires_at.tzinfo is None:  # clients built without tz_aware hand back naive UTC
        expires_at = expires_at.replace(tzinfo=UTC)
    return bool(expires_at <= now)


def stored_from_document(document: dict[str, Any], conversation_id: str) -> StoredMessage:
    """Decode a stored message document.

    Raises:
        MessageDecodeError: If the record does not decode; the message names the conversation.
    """
    data = document.get("data")
    if not isinstance(data, str):
        raise MessageDecodeError(
            f"stored message in conversation {conversation_id!r} has no JSON text",
            conversation_id=conversation_id,
            backend=BACKEND,
        )
    message = decode_message(data, conversation_id=conversation_id)
    return StoredMessage(int(document["position"]), message)


def version_of(newest: dict[str, Any] | None, conversation: dict[str, Any] | None) -> int:
    """A conversation's version: its newest stored position, or the newest it deleted.

    Args:
        newest: The newest message document of the conversation's current life, if any.
        conversation: Its conversation document, if any (``deleted_through`` is read).
    """
    stored = 0 if newest is None else int(newest["position"])
    deleted = 0 if conversation is None else int(conversation.get("deleted_through", 0))
    return max(stored, deleted)


def is_expired(document: dict[str, Any] | None, now: datetime) -> bool:
    """Tell whether a conversation document's stored expiry has passed."""
    expires_at = None if document is None else document.get("expires_at")
    if expires_at is None:
        return False
    if expires_at.tzinfo is None:  # clients built without tz_aware hand back naive UTC
        expires_at = expires_at.replace(tzinfo=UTC)
    return bool(expires_at <= now)


# Not shared: only ints pass (no digit text, unlike SQL and Cassandra) and the error names MongoDB.
def check_position(position: Position) -> int:
    """Accept only positions this backend hands out (integers).

    Raises:
        ConfigurationError: For anything else.
    """
    if isinstance(position, bool) or not isinstance(position, int):
        raise ConfigurationError(f"MongoDB positions are integers, got {position!r}")
    return position


def regex_literal(text: str) -> str:
    """Escape text so a ``$regex`` matches it literally, in PCRE (MongoDB) and RE2 (FerretDB).

    Both engines read a backslash before ASCII punctuation as that character, so exactly the
    ASCII punctuation is escaped and everything else stays as it is. NUL, which FerretDB
    rejects in strings, becomes the stand-in the stored search text uses.
    """
    text = text.replace("\x00", _NUL_STAND_IN)
    return "".join("\\" + c if c in string.punctuation else c for c in text)


def history_filter(
    conversation_id: str,
    *,
    since: datetime | None,
    until: datetime | None,
    types: Collection[MessageType] | None,
    text: str | None,
    after: Position | None,
) -> dict[str, Any]:
    """The ``find`` filter of ``find_history``; every value is passed as a value."""
    query: dict[str, Any] = {"conversation_id": conversation_id}
    if after is not None:
        query["position"] = {"$gt": check_position(after)}
    created: dict[str, int] = {}
    if since is not None:
        created["$gte"] = epoch_micros(since)
    if until is not None:
        created["$lt"] = epoch_micros(until)
    if created:
        query["created_us"] = created
    if types is not None:
        query["type"] = {"$in": [MessageType(t).value for t in types]}
    if text is not None:
        query["text"] = {"$regex": regex_literal(text), "$options": "i"}
    return query


def server_product(build_info: dict[str, Any]) -> str:
    """The product and version ``buildInfo`` reports, such as ``"MongoDB 7.0.14"``.

    A MongoDB wire-protocol server that says what it is (FerretDB) is named with the MongoDB
    version it reports, as ``"FerretDB 1.24.0 (MongoDB 7.0.42)"``.
    """
    version = str(build_info.get("version", "unknown"))
    ferret = build_info.get("ferretdbVersion") or (build_info.get("ferretdb") or {}).get("version")
    if ferret:
        return f"FerretDB {str(ferret).removeprefix('v')} (MongoDB {version})"
    return f"MongoDB {version}"

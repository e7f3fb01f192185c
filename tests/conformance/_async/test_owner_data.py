"""Erasing and exporting one owner's data on every backend, plain and encrypted.

Two owners (and a third whose name starts with the first's) have interleaved conversations
with system messages, events, summaries, forks and vector entries. Erasing one leaves the
others byte for byte as they were; exporting writes the same lines every time; an erase
stopped part way, again and again, is finished by running it again. Every test writes
conversations of fresh owners, so runs on the shared servers do not see each other's data,
and erases what it wrote.
"""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

from chatmem import (
    AssistantMessage,
    EventMessage,
    SystemMessage,
    UserMessage,
    encode_message,
    scoped_conversation_id,
)
from chatmem.encryption import AsyncEncryptedLog
from chatmem.model import ChatResponse, Generation
from chatmem.privacy import ErasureReport, ExportReport, async_erase_owner, async_export_owner
from chatmem.sessions import AsyncSessions
from chatmem.testing.vectors import AsyncHashingEmbeddingModel
from chatmem.vector_store import AsyncInMemoryVectorStore, VectorDocument, VectorFilter
from chatmem_advisors._long_term import documents_to_store
from tests.support import owner_data

async_owner_log = owner_data.async_owner_log

ALL = 10_000  # more than any test stores


class People:
    """Fresh owners and their conversations: Ann's, Bob's and Annx's (Ann's name and an x)."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:10]
        self.ann, self.bob, self.annx = f"ann-{tag}", f"bob-{tag}", f"ann-{tag}x"
        self.ann_trip = scoped_conversation_id(self.ann, "trip")
        self.ann_work = scoped_conversation_id(self.ann, "work")
        self.ann_retry = f"retry-{tag}-ann"  # a fork whose id names no owner
        self.ann_retry_2 = scoped_conversation_id(self.ann, "retry-2")  # a fork of the fork
        self.bob_trip = scoped_conversation_id(self.bob, "trip")
        self.bob_retry = f"retry-{tag}-bob"
        self.annx_trip = scoped_conversation_id(self.annx, "trip")

    @property
    def anns(self) -> list[str]:
        return [self.ann_trip, self.ann_work, self.ann_retry, self.ann_retry_2]

    @property
    def others(self) -> list[str]:
        return [self.bob_trip, self.bob_retry, self.annx_trip]


def _entries(conversation_id: str, turn: int) -> list[VectorDocument]:
    answer = ChatResponse([Generation(AssistantMessage(f"{conversation_id} remembers {turn}"))])
    return documents_to_store(
        conversation_id, UserMessage(f"{conversation_id} tells {turn}"), answer
    )


async def populate(log: Any, people: People, vectors: AsyncInMemoryVectorStore) -> None:
    """Write the three owners' conversations, interleaved, and the advisor's vector entries."""
    sessions = AsyncSessions(log)
    chats = [people.ann_trip, people.bob_trip, people.ann_work, people.annx_trip]
    for conversation_id in chats[:2]:
        await log.append(conversation_id, [SystemMessage(f"Be brief, {conversation_id}.")])
    for turn in range(3):
        for conversation_id in chats:
            await log.append(
                conversation_id,
                [
                    UserMessage(f"{conversation_id} question {turn}"),
                    AssistantMessage(f"{conversation_id} answer {turn}"),
                ],
            )
        for conversation_id in chats[:2]:
            await sessions.append_event(
                conversation_id, EventMessage("acme.audit", {"turn": turn, "who": conversation_id})
            )
    for conversation_id in chats[:2]:
        covers = (await log.find_history(conversation_id, limit=3))[-1].position
        assert await log.save_summary(
            conversation_id, f"{conversation_id} asked three things", covers, expected_version=0
        )
    # Forks carry the summary; one is forked again, under an id of Ann's.
    await sessions.fork(people.ann_trip, people.ann_retry)
    await sessions.fork(people.bob_trip, people.bob_retry)
    await log.append(people.ann_retry, [UserMessage("retrying, Ann"), AssistantMessage("ok")])
    await log.append(people.bob_retry, [UserMessage("retrying, Bob"), AssistantMessage("ok")])
    await sessions.fork(people.ann_retry, people.ann_retry_2)
    await log.append(people.ann_retry_2, [UserMessage("once more, Ann")])
    for turn in range(2):
        for conversation_id in [*people.anns, *people.others]:
            await vectors.add(_entries(conversation_id, turn))


def _store(log: Any) -> Any:
    """What the backend holds: under an encrypted log, the sealed records."""
    return log.repository if isinstance(log, AsyncEncryptedLog) else log


async def raw(log: Any, conversation_ids: list[str]) -> dict[str, Any]:
    """Every stored record of the conversations, as stored: positions, encodings, summaries."""
    store = _store(log)
    held: dict[str, Any] = {}
    for conversation_id in conversation_ids:
        records = [
            (s.position, encode_message(s.message))
            for s in await store.find_history(conversation_id, limit=ALL)
        ]
        summary = await store.find_summary(conversation_id)
        held[conversation_id] = (records, summary)
    return held


async def vector_entries(vectors: AsyncInMemoryVectorStore, where: VectorFilter) -> set[str]:
    found = await vectors.similarity_search("remembers tells", top_k=ALL, where=where)
    return {f"{d.id} {d.text} {sorted(d.metadata.items())}" for d in found}


async def others_entries(vectors: AsyncInMemoryVectorStore, people: People) -> set[str]:
    return (
        await vector_entries(vectors, VectorFilter(owner=people.bob))
        | await vector_entries(vectors, VectorFilter(conversation_id=people.bob_retry))
        | await vector_entries(vectors, VectorFilter(owner=people.annx))
    )


async def export(log: Any, owner: str) -> tuple[ExportReport, str]:
    out = io.StringIO()
    report = await async_export_owner(log, owner, out)
    return report, out.getvalue()


async def listed(log: Any, owner: str) -> list[str]:
    return (await log.list_conversations(owner=owner, limit=1000)).conversation_ids


async def clean_up(log: Any, people: People) -> None:
    for owner in (people.ann, people.bob, people.annx):
        await async_erase_owner(log, owner)


async def test_erase_takes_one_owner_and_leaves_the_others_byte_for_byte(
    async_owner_log: Any,
) -> None:
    log, people = async_owner_log, People()
    vectors = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())
    await populate(log, people, vectors)
    try:
        others_before = await raw(log, people.others)
        bob_before = await export(log, people.bob)
        annx_before = await export(log, people.annx)
        entries_before = await others_entries(vectors, people)
        ann_entries = await vector_entries(vectors, VectorFilter(owner=people.ann))
        ann_entries |= await vector_entries(vectors, VectorFilter(conversation_id=people.ann_retry))

        exported, lines = await export(log, people.ann)
        assert await export(log, people.ann) == (exported, lines)  # a re-run: the same lines
        records = [json.loads(line) for line in lines.splitlines()]
        assert sorted(r["conversation_id"] for r in records if "summary" in r) == sorted(
            [people.ann_trip, people.ann_retry, people.ann_retry_2]
        )
        written = {r["conversation_id"] for r in records}
        assert written == set(people.anns)
        assert exported == ExportReport(
            conversations=3, forks=1, messages=len(records) - 3, summaries=3
        )
        assert "chatmem.data_key" not in lines
        assert f"{people.ann_trip} question 2" in lines  # in clear, encrypted or not
        assert people.bob not in lines
        assert f"{people.annx}:" not in lines

        # Three trees at once: Ann's fork of a fork is also one of her conversations.
        erased = await async_erase_owner(log, people.ann, vector_store=vectors, concurrency=3)
        assert erased == ErasureReport(
            conversations=3,
            forks=1,
            messages=exported.messages,
            summaries=3,
            vector_entries=len(ann_entries),
        )
        assert await listed(log, people.ann) == []
        assert await raw(log, people.anns) == {c: ([], None) for c in people.anns}
        assert await vector_entries(vectors, VectorFilter(owner=people.ann)) == set()
        assert await vector_entries(vectors, VectorFilter(conversation_id=people.ann_retry)) == (
            set()
        )

        assert await raw(log, people.others) == others_before
        assert await export(log, people.bob) == bob_before
        assert await export(log, people.annx) == annx_before
        assert await others_entries(vectors, people) == entries_before
        assert await listed(log, people.annx) == [people.annx_trip]

        assert await async_erase_owner(log, people.ann, vector_store=vectors) == ErasureReport()
        assert await export(log, people.ann) == (ExportReport(), "")
    finally:
        await clean_up(log, people)


class StoppedError(Exception):
    """Raised where a test stops an erase."""


class Budget:
    """How many more deletes that delete something an erase may make before it is stopped.

    Deleting what is already gone is no progress, so it costs nothing (but is stopped too
    once the budget is spent).
    """

    def __init__(self, deletes: int) -> None:
        self.left = deletes

    def check(self) -> None:
        if self.left == 0:
            raise StoppedError

    def spend(self) -> None:
        self.left -= 1


class AsyncStoppingLog:
    """A log whose deletes stop once the budget is spent; everything else is the log's."""

    def __init__(self, log: Any, budget: Budget) -> None:
        self.log = log
        self.budget = budget
        # Python 3.12+ checks runtime protocols without __getattr__ (getattr_static): the
        # log's public members are set on the instance, so this is a session log as the
        # log is.
        for name in dir(log):
            if not name.startswith("_") and not hasattr(type(self), name):
                setattr(self, name, getattr(log, name))

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        self.budget.check()
        held = await self.log.find_history(conversation_id, limit=1)
        await self.log.delete_by_conversation_id(conversation_id)
        if held:
            self.budget.spend()


class AsyncStoppingVectorStore:
    """A vector store whose deletes stop once the budget is spent."""

    def __init__(self, store: AsyncInMemoryVectorStore, budget: Budget) -> None:
        self.store = store
        self.budget = budget

    async def delete_where(self, where: Any) -> int:
        self.budget.check()
        deleted = await self.store.delete_where(where)
        if deleted:
            self.budget.spend()
        return deleted


async def reachable(log: Any, owner: str) -> set[str]:
    """The owner's conversations and every fork of them, found as an erase finds them."""
    sessions = AsyncSessions(log)
    found: set[str] = set()
    todo = await listed(log, owner)
    while todo:
        conversation_id = todo.pop()
        if conversation_id not in found:
            found.add(conversation_id)
            todo += [f.conversation_id for f in await sessions.list_forks(conversation_id)]
    return found


async def test_an_erase_stopped_again_and_again_is_finished_by_running_it_again(
    async_owner_log: Any,
) -> None:
    log, people = async_owner_log, People()
    vectors = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())
    await populate(log, people, vectors)
    try:
        others_before = await raw(log, people.others)
        entries_before = await others_entries(vectors, people)
        # Each run deletes one more thing (a conversation or vector entries), then stops.
        stops = 0
        while True:
            budget = Budget(1)
            try:
                await async_erase_owner(
                    AsyncStoppingLog(log, budget),
                    people.ann,
                    vector_store=AsyncStoppingVectorStore(vectors, budget),
                )
            except StoppedError:
                stops += 1
            else:
                break
            held = {c for c, (records, _) in (await raw(log, people.anns)).items() if records}
            # Nothing left behind is out of reach of the next run.
            assert held <= await reachable(log, people.ann)
        # Six deletes (four conversations, the entries of the fork without owner, then the
        # owner's entries): five runs stop, the sixth finishes.
        assert stops == 5
        assert await raw(log, people.anns) == {c: ([], None) for c in people.anns}
        assert await vector_entries(vectors, VectorFilter(owner=people.ann)) == set()
        assert await vector_entries(vectors, VectorFilter(conversation_id=people.ann_retry)) == (
            set()
        )
        assert await raw(log, people.others) == others_before
        assert await others_entries(vectors, people) == entries_before
        assert await async_erase_owner(log, people.ann, vector_store=vectors) == ErasureReport()
    finally:
        await clean_up(log, people)

"""``prune``: retention for a configured repository."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from chatmem import (
    ChatMemoryLog,
    MessageType,
)
from chatmem_cli._transfer_engine import iter_conversations

__all__ = ["PruneReport", "prune_older_than"]


@dataclass
class PruneReport:
    """What ``prune --older-than`` did (or would do, in a dry run)."""

    conversations: int = 0
    """Conversations looked at."""
    messages: int = 0
    """Messages deleted (or counted, in a dry run)."""
    emptied: int = 0
    """Conversations deleted whole because nothing in them is recent."""


def _older_count(repository: ChatMemoryLog, conversation_id: str, cutoff: datetime) -> int:
    count = 0
    after = None
    while True:
        page = repository.find_history(conversation_id, until=cutoff, after=after, limit=500)
        count += sum(1 for s in page if s.message.type is not MessageType.SYSTEM)
        if len(page) < 500:
            return count
        after = page[-1].position


def prune_older_than(
    repository: ChatMemoryLog,
    age: timedelta,
    *,
    owner: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PruneReport:
    """Delete messages created more than ``age`` ago.

    In each conversation the messages before the first recent one go (system messages stay,
    so the current instructions survive). A conversation with no recent message at all is
    deleted whole.

    Args:
        repository: Where to prune.
        age: How old a message must be to go.
        owner: Only this owner's conversations.
        dry_run: Count, delete nothing.
        now: The current time (for tests).
    """
    cutoff = (now or datetime.now(UTC)) - age
    report = PruneReport()
    # Deleting while paging could shift a backend's cursor, so collect the ids first (ids
    # only, never messages) unless nothing is deleted.
    ids = iter_conversations(repository, owner=owner)
    for conversation_id in list(ids) if not dry_run else ids:
        report.conversations += 1
        recent = repository.find_history(conversation_id, since=cutoff, limit=1)
        if not recent:
            old = _older_count(repository, conversation_id, cutoff)
            report.messages += old
            report.emptied += 1
            if not dry_run:
                repository.delete_by_conversation_id(conversation_id)
            continue
        if dry_run:
            report.messages += _older_count(repository, conversation_id, cutoff)
        else:
            report.messages += repository.delete_before(conversation_id, recent[0].position)
    return report

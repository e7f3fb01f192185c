"""The rules of version-checked appends, proved from one conversation's history (no I/O).

A conversation's version grows with every append that stores something, and goes back to 0
only when the conversation is emptied: deleted, cleared or expired (see
:meth:`chatmem.testing._timeline.Timeline.could_empty`). So, unless it may have been emptied
in between, once an append stored something no version-checked append may succeed at a version
read before it. Two rules follow, each needing only intervals and outcomes:

- ``double-version-win``: two version-checked appends at one expected version both stored
  messages. Whichever took effect first moved the version past it, so the other must have been
  refused.
- ``stale-version-win``: a version-checked append stored messages although another append
  stored messages after the version read it relies on had returned, and was acknowledged before
  it began: that append certainly moved the version past the one read.

The third rule, a refused append whose messages are stored (``refused-append-stored``), is
judged with the reads, in :mod:`chatmem.testing._checker`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from chatmem.testing._history import VERSION_READ, History, Operation, Outcome
from chatmem.testing._timeline import Timeline

__all__ = ["VersionFinding", "version_findings"]


@dataclass(frozen=True, slots=True)
class VersionFinding:
    """A violation of the version rules: what :class:`~chatmem.testing.Anomaly` is built from."""

    kind: str
    """``"double-version-win"`` or ``"stale-version-win"``."""
    subject: tuple[str, ...]
    """Ids of the messages the offending append stored."""
    operations: tuple[int, ...]
    """Indexes of the operations that prove it."""
    explanation: str
    """Why this is a violation."""


def version_findings(
    operations: Sequence[Operation], timeline: Timeline, history: History
) -> list[VersionFinding]:
    """Return the version rules one conversation's operations break.

    Args:
        operations: The conversation's operations.
        timeline: Its deletes and expiry.
        history: The whole history, for labels.
    """
    winners = sorted(
        (o for o in operations if o.version_checked and o.refreshes), key=lambda o: o.index
    )
    findings = _double_wins(winners, timeline, history)
    findings += _stale_wins(winners, operations, timeline, history)
    return findings


def _double_wins(
    winners: list[Operation], timeline: Timeline, history: History
) -> list[VersionFinding]:
    by_version: dict[int | None, list[Operation]] = defaultdict(list)
    for winner in winners:
        by_version[winner.expected_version].append(winner)
    findings = []
    for version, group in by_version.items():
        for i, later in enumerate(group):
            for earlier in group[:i]:
                # Either may have taken effect first; the version can only have come back to
                # the one both expected if the conversation was emptied after that.
                start = min(earlier.invoked, later.invoked)
                end = max(earlier.completed, later.completed)
                if timeline.could_remove(start, end) or timeline.could_expire(start, end):
                    continue
                findings.append(
                    VersionFinding(
                        "double-version-win",
                        (*earlier.batch, *later.batch),
                        (earlier.index, later.index),
                        f"#{earlier.index} and #{later.index} both stored messages at version "
                        f"{version} ({history.labels_of(earlier.stored or ())} and "
                        f"{history.labels_of(later.stored or ())}): whichever came first moved "
                        "the version, so the other must have been refused, and no delete or "
                        "expiry can have reset it in between",
                    )
                )
                break
    return findings


def _stale_wins(
    winners: list[Operation],
    operations: Sequence[Operation],
    timeline: Timeline,
    history: History,
) -> list[VersionFinding]:
    by_index = {o.index: o for o in operations}
    movers = sorted((o for o in operations if o.refreshes), key=lambda o: o.completed)
    findings = []
    for winner in winners:
        read = by_index.get(winner.version_read) if winner.version_read is not None else None
        if (
            read is None
            or read.action != VERSION_READ
            or read.outcome is not Outcome.OK
            or read.version != winner.expected_version
        ):
            continue
        if timeline.could_empty(read.invoked, winner.completed):
            continue
        mover = next(
            (
                m
                for m in movers
                if m is not winner and m.invoked > read.completed and m.completed < winner.invoked
            ),
            None,
        )
        if mover is None:
            continue
        findings.append(
            VersionFinding(
                "stale-version-win",
                winner.batch,
                (read.index, mover.index, winner.index),
                f"#{winner.index} stored {history.labels_of(winner.stored or ())} at version "
                f"{winner.expected_version}, read by #{read.index}, although #{mover.index} "
                f"stored {history.labels_of(mover.stored or ())} after that read returned and "
                f"was acknowledged before #{winner.index} began: it moved the version, so "
                f"#{winner.index} must have been refused",
            )
        )
    return findings

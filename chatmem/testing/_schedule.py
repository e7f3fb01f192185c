"""The history checker's seeded schedule: what each worker does in each cycle (no I/O).

Everything random about a run is drawn here from the seed, so the same seed replays the same
schedule (the interleaving, decided by the scheduler and the servers, differs).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, replace

__all__ = ["CheckerSettings", "Step", "plan", "plan_revives", "resolve_seed"]

# (step, weight): writes, retries, deletes and every kind of read.
_MIX: tuple[tuple[str, int], ...] = (
    ("append", 30),
    ("versioned_append", 20),
    ("memory.add", 8),
    ("system", 7),
    ("retry", 8),
    ("delete_by_conversation_id", 4),
    ("memory.clear", 3),
    ("find_by_conversation_id", 12),
    ("find_recent", 10),
    ("find_window", 6),
    ("find_system_message", 5),
    ("memory.get", 7),
)
_STEPS = [name for name, _ in _MIX]
_WEIGHTS = [weight for _, weight in _MIX]
_HOT_SHARE = 0.7


@dataclass(frozen=True, slots=True)
class CheckerSettings:
    """How big a history checker run is.

    Example:
        ```python
        settings = CheckerSettings(workers=4, conversations=24, cycles=5)
        ```
    """

    workers: int = 4
    """Concurrent writers and readers (threads in the sync variant, tasks in the async one)."""
    purgers: int = 2
    """Concurrent callers of ``purge_expired`` while the workers run."""
    conversations: int = 40
    """Conversations per run. Each cycle starts with one append to each, all at once: from the
    second cycle on, each revives an expired conversation while a purge runs."""
    revive_spread: float = 0.05
    """Those appends start spread over this many seconds after the cycle's first purge began,
    or over as long as the previous cycle's first purge took if that is longer, so they meet
    the purge at every stage of its work."""
    hot_conversations: int = 3
    """The first conversations, where most mixed operations go, so they contend."""
    cycles: int = 4
    """Rounds of appends to every conversation, mixed operations, and a read of each."""
    steps_per_cycle: int = 10
    """Mixed operations per worker per cycle."""
    max_messages: int = 8
    """Window of the ``MessageWindowChatMemory`` the workers read and write through."""
    max_limit: int = 8
    """Largest ``limit`` of ``find_recent`` and ``find_window``."""


@dataclass(frozen=True, slots=True)
class Step:
    """One operation a worker will make."""

    action: str
    """``"append"``, ``"versioned_append"`` (read the version, then append expecting it),
    ``"memory.add"``, ``"system"`` (a new system message), ``"retry"``, a delete, or a read
    action."""
    conversation: int
    """Index of the conversation."""
    replies: int
    """Assistant messages after the user message of a new batch (0 to 4)."""
    limit: int
    """``limit`` of a window read."""
    system_alone: bool
    """Whether a new system message is appended on its own or leads a turn."""
    pick: float
    """Which earlier batch a retry repeats, as a fraction of the worker's batches."""
    delay: float = 0.0
    """When a revive starts after the first purge of its cycle did, as a fraction of the
    spread (0 to 1)."""
    revive: bool = False
    """Whether this append restarts a conversation left idle since the previous cycle."""


def resolve_seed(seed: int | None) -> int:
    """Return ``seed``, else ``CHATMEM_CHECKER_SEED`` from the environment, else a fresh one."""
    if seed is not None:
        return seed
    configured = os.environ.get("CHATMEM_CHECKER_SEED", "").strip()
    if configured:
        return int(configured)
    return random.SystemRandom().randrange(2**32)


def plan_revives(seed: int, cycle: int, settings: CheckerSettings) -> list[Step]:
    """Return the cycle's first appends: one per conversation, each after a seeded delay.

    From the second cycle on, every conversation has expired when these run, and they run
    all at once while ``purge_expired`` is in progress, so each one races a purge.

    Args:
        seed: The run's seed.
        cycle: Which cycle, from 0.
        settings: The run's size.
    """
    rng = random.Random(f"{seed}:{cycle}:revive")
    return [
        _step(rng, settings, "append", c, revive=cycle > 0) for c in range(settings.conversations)
    ]


def plan(seed: int, cycle: int, worker: int, settings: CheckerSettings) -> list[Step]:
    """Return a worker's mixed steps for one cycle.

    Args:
        seed: The run's seed.
        cycle: Which cycle, from 0.
        worker: Which worker, from 0.
        settings: The run's size.
    """
    rng = random.Random(f"{seed}:{cycle}:{worker}")
    steps = []
    for _ in range(settings.steps_per_cycle):
        action = rng.choices(_STEPS, _WEIGHTS)[0]
        hot = rng.randrange(min(settings.hot_conversations, settings.conversations))
        anywhere = rng.randrange(settings.conversations)
        conversation = hot if rng.random() < _HOT_SHARE else anywhere
        steps.append(_step(rng, settings, action, conversation))
    # Every worker makes a version-checked append each cycle, whatever the draws: a small run
    # could otherwise draw none, and a run that checks no version proves nothing about them.
    if steps and all(step.action != "versioned_append" for step in steps):
        chosen = rng.randrange(len(steps))
        steps[chosen] = replace(steps[chosen], action="versioned_append")
    return steps


def _step(
    rng: random.Random,
    settings: CheckerSettings,
    action: str,
    conversation: int,
    *,
    revive: bool = False,
) -> Step:
    # Draw every field whatever the action, so one step never shifts the draws of the next.
    return Step(
        action=action,
        conversation=conversation,
        replies=rng.randrange(5),
        limit=rng.randint(1, settings.max_limit),
        system_alone=rng.random() < 0.5,
        pick=rng.random(),
        delay=rng.random(),
        revive=revive,
    )

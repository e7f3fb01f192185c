"""What could have happened to one conversation between two instants of a history (no I/O).

Two things remove a conversation's messages legitimately: a delete (``delete_by_conversation_id``
or ``memory.clear``) and expiry. The checker asks whether either *could* have taken effect
between a write and a later read, and only then excuses a missing message.

Expiry is modelled from the history alone, conservatively. A conversation expires ``ttl`` after
its last write, on the store's clock; the client only knows that each write's effect happened
somewhere inside the write's interval. Only writes that certainly stored something count as
refreshing the time to live (a retry that stored nothing, a failed or an unknown write may not
have). Expiry could have removed a write's messages before instant ``b`` if some window of
length ``L = ttl - slack`` that starts at or after the write's invocation and ends by ``b``
contains no refreshing write entirely: the adversary places every write's effect as early as
its interval allows, which maximises idle gaps. A write that refreshed nothing itself (a retry)
may have sat in an already idle conversation, so its windows may start up to ``L`` earlier.
``purge_expired`` needs no rule of its own: it may only delete what has already expired, so a
purge that removes more shows up as a lost append where expiry was impossible.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate

from chatmem.testing._history import DESTRUCTIVE_ACTIONS, Operation, Outcome

__all__ = ["Timeline"]


class Timeline:
    """Answers "could this conversation have lost its messages between a and b?".

    Args:
        operations: The conversation's operations.
        expiry_window: ``ttl - slack`` in seconds, or ``None`` if it never expires.
    """

    def __init__(self, operations: Iterable[Operation], expiry_window: float | None) -> None:
        ops = list(operations)
        deletes = sorted(
            (o for o in ops if o.action in DESTRUCTIVE_ACTIONS and o.may_apply),
            key=lambda o: o.invoked,
        )
        self._delete_invoked = [o.invoked for o in deletes]
        self._delete_latest_end = list(accumulate((o.latest_effect for o in deletes), max))
        certain = sorted(
            (o for o in ops if o.action in DESTRUCTIVE_ACTIONS and o.outcome is Outcome.OK),
            key=lambda o: o.completed,
        )
        self._certain_completed = [o.completed for o in certain]
        self._certain_latest_start = list(accumulate((o.invoked for o in certain), max))
        self._window = expiry_window
        refreshes = sorted((o for o in ops if o.refreshes), key=lambda o: o.invoked)
        self._refresh_invoked = [o.invoked for o in refreshes]
        # _earliest_end[j]: the earliest completion among refreshes j.. (sorted by invocation).
        ends = [o.completed for o in refreshes] + [math.inf]
        self._earliest_end = list(reversed(list(accumulate(reversed(ends), min))))
        free = [expiry_window is not None and self._free(s) for s in self._refresh_invoked]
        self._free_before = [0, *accumulate(int(f) for f in free)]

    def could_remove(self, start: float, end: float) -> bool:
        """Whether a delete not known to have failed may have taken effect in ``(start, end)``."""
        j = bisect_left(self._delete_invoked, end)
        return j > 0 and self._delete_latest_end[j - 1] > start

    def could_expire(self, start: float, end: float) -> bool:
        """Whether the conversation may have expired after ``start`` and before ``end``.

        Args:
            start: The earliest instant the conversation's last refresh before the expiry
                may have happened (see :meth:`expiry_start`).
            end: The latest instant that matters (a read's completion).
        """
        window = self._window
        if window is None:
            return False
        if window <= 0:
            return True
        if start + window > end:
            return False
        if self._free(start):
            return True
        lo = bisect_right(self._refresh_invoked, start)
        hi = bisect_right(self._refresh_invoked, end - window)
        return hi > lo and self._free_before[hi] - self._free_before[lo] > 0

    def expiry_start(self, write: Operation, first_stored: float) -> float:
        """Return where a window of idleness that expires what a write stored may start.

        A write that stored something refreshed the time to live itself, so the window starts
        at or after it. A write that only found its messages already stored (a retry) did not;
        the conversation was live when it ran, so its last refresh was less than ``ttl``
        before, and no earlier than the first write that may have stored the messages.

        Args:
            write: A successful write.
            first_stored: The earliest invocation of a write that may have stored its messages.
        """
        if write.refreshes or self._window is None:
            return write.invoked
        return max(write.invoked - self._window, first_stored)

    def could_lose(self, write: Operation, first_stored: float, end: float) -> bool:
        """Whether a delete or expiry may have removed what a write stored, before ``end``."""
        return self.could_remove(write.invoked, end) or self.could_expire(
            self.expiry_start(write, first_stored), end
        )

    def could_empty(self, start: float, end: float) -> bool:
        """Whether the conversation may have been emptied at an instant in ``(start, end)``.

        A delete or an expiry empties it, and sends its version back to 0. An expiry at that
        instant needs an idle window ending there, which may have begun before ``start``.
        """
        lead = self._window or 0.0
        return self.could_remove(start, end) or self.could_expire(start - lead, end)

    def latest_certain_delete(self, before: float) -> float:
        """Return the latest invocation of a successful delete that completed before ``before``.

        Returns ``-inf`` if there is none.
        """
        j = bisect_left(self._certain_completed, before)
        return self._certain_latest_start[j - 1] if j > 0 else -math.inf

    def _free(self, start: float) -> bool:
        """Whether no refreshing write falls entirely inside ``(start, start + window)``."""
        assert self._window is not None
        j = bisect_right(self._refresh_invoked, start)
        return self._earliest_end[j] >= start + self._window

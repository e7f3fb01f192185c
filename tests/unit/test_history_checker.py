"""The history checker on hand-built histories: each anomaly found, valid histories accepted."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem.testing import (
    Anomaly,
    History,
    HistoryCheckError,
    Operation,
    Outcome,
    check_history,
    find_anomalies,
)

OK, FAILED, UNKNOWN = Outcome.OK, Outcome.FAILED, Outcome.UNKNOWN


class Builder:
    """Builds a history of one conversation ``c`` (unless told otherwise) with short ids."""

    def __init__(self, ttl: float | None = None) -> None:
        self.operations: list[Operation] = []
        self.ttl = ttl

    def _add(self, action: str, start: float, end: float, **fields: Any) -> int:
        index = len(self.operations)
        fields.setdefault("conversation", "c")
        fields.setdefault("process", "w0")
        fields.setdefault("outcome", OK)
        self.operations.append(
            Operation(index=index, action=action, invoked=start, completed=end, **fields)
        )
        return index

    def append(
        self,
        start: float,
        end: float,
        *ids: str,
        stored: tuple[str, ...] | None = None,
        outcome: Outcome = OK,
        **fields: Any,
    ) -> int:
        if stored is None and outcome is OK:
            stored = ids
        system = frozenset(i for i in ids if i.startswith("s"))
        return self._add(
            "append",
            start,
            end,
            batch=ids,
            stored=stored,
            outcome=outcome,
            system_ids=system,
            **fields,
        )

    def read(self, start: float, end: float, *ids: str, **fields: Any) -> int:
        return self._add("find_by_conversation_id", start, end, messages=ids, **fields)

    def recent(self, start: float, end: float, limit: int, *ids: str, **fields: Any) -> int:
        return self._add("find_recent", start, end, messages=ids, limit=limit, **fields)

    def system(self, start: float, end: float, shown: str | None) -> int:
        return self._add("find_system_message", start, end, system=shown)

    def delete(self, start: float, end: float, outcome: Outcome = OK) -> int:
        return self._add("delete_by_conversation_id", start, end, outcome=outcome)

    def version(self, start: float, end: float, version: int, **fields: Any) -> int:
        return self._add("find_version", start, end, version=version, **fields)

    def checked(
        self, start: float, end: float, read: int, *ids: str, outcome: Outcome = OK, **fields: Any
    ) -> int:
        """A version-checked append expecting the version the ``find_version`` ``read`` saw."""
        expected = self.operations[read].version
        return self.append(
            start,
            end,
            *ids,
            outcome=outcome,
            expected_version=expected,
            version_read=read,
            **fields,
        )

    def purge(self, start: float, end: float) -> int:
        return self._add("purge_expired", start, end, conversation=None, process="purger0")

    def history(self) -> History:
        return History(self.operations, ttl=self.ttl, seed=7, expiry_slack=0.0)

    def kinds(self) -> list[str]:
        return [a.kind for a in find_anomalies(self.history())]


def only(builder: Builder) -> Anomaly:
    anomalies = find_anomalies(builder.history())
    assert len(anomalies) == 1, anomalies
    return anomalies[0]


# -- valid histories ---------------------------------------------------------------------------


def test_a_valid_concurrent_history_is_accepted() -> None:
    h = Builder()
    h.append(0.0, 1.0, "u1", "a1", process="w0")
    h.append(0.5, 1.5, "u2", process="w1")  # concurrent with the first: either order
    h.read(0.6, 0.7)  # before either was acknowledged: may see nothing
    h.read(0.8, 1.2, "u2")  # u2 may be in, the first batch not yet
    h.read(1.6, 1.7, "u2", "u1", "a1")
    h.recent(1.8, 1.9, 2, "u1", "a1")  # the newest two
    h.append(2.0, 2.1, "u1", "a1", stored=())  # a retry: nothing new
    h.read(2.2, 2.3, "u2", "u1", "a1")
    h.recent(2.4, 2.5, 2, "u1", "a1")
    h.recent(2.4, 2.5, 1, "a1")  # a full window cuts a batch at its oldest edge only
    h.delete(2.6, 2.7)
    h.read(2.65, 2.66, "u2", "u1", "a1")  # concurrent with the delete: before it
    h.read(2.8, 2.9)
    h.append(3.0, 3.1, "u1", "a1")  # the retry after the delete stores the batch again
    h.read(3.2, 3.3, "u1", "a1")
    h.purge(0.0, 4.0)
    check_history(h.history())


def test_a_delete_that_may_follow_an_append_excuses_its_absence() -> None:
    h = Builder()
    h.append(0.0, 1.0, "u1")
    h.delete(0.5, 3.0, outcome=UNKNOWN)
    h.read(2.0, 2.1)
    assert h.kinds() == []


def test_expiry_excuses_an_append_left_idle_for_the_ttl() -> None:
    h = Builder(ttl=1.0)
    h.append(0.0, 0.1, "u1")
    h.read(0.5, 0.6, "u1")
    h.read(1.5, 1.6)  # idle for the ttl: expired
    h.append(1.7, 1.8, "u2")
    h.read(1.9, 2.0, "u2")
    assert h.kinds() == []


def test_writes_in_between_keep_a_conversation_alive() -> None:
    h = Builder(ttl=1.0)
    h.append(0.0, 0.1, "u1")
    h.append(0.6, 0.7, "u2")
    h.append(1.2, 1.3, "u3")
    h.read(1.8, 1.9, "u2", "u3")  # never idle for the ttl: u1 is lost
    assert only(h).kind == "lost-append"
    assert only(h).subject == ("u1",)


def test_a_retry_that_stored_nothing_did_not_refresh_the_ttl() -> None:
    h = Builder(ttl=1.0)
    h.append(0.0, 0.1, "u1")
    h.append(0.9, 1.0, "u1", stored=())  # already there: the ttl still runs from 0.1
    h.read(1.3, 1.4)  # so this may be after expiry
    assert h.kinds() == []


# -- anomalies ------------------------------------------------------------------------------------


def test_lost_acknowledged_append() -> None:
    h = Builder()
    h.append(0.0, 1.0, "u1", "a1")
    h.append(1.1, 1.2, "u2")
    h.read(2.0, 2.1, "u2")
    anomaly = only(h)
    assert anomaly.kind == "lost-append"
    assert anomaly.subject == ("u1", "a1")
    assert anomaly.operations == (0, 2)


def test_lost_append_shown_by_a_newer_message_despite_a_later_delete() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    h.append(0.2, 0.3, "u2")
    h.delete(0.35, 5.0, outcome=UNKNOWN)  # may excuse both, but not one without the other
    h.read(0.4, 0.5, "u2")
    assert h.kinds() == ["lost-append"]


def test_lost_revive_raced_by_a_purge() -> None:
    h = Builder(ttl=1.0)
    h.append(0.0, 0.1, "u1")
    h.purge(1.5, 1.7)
    h.append(1.55, 1.6, "u2")  # revives the expired conversation while the purge runs
    h.read(1.8, 1.9)  # the purge took the revive with it
    anomaly = only(h)
    assert (anomaly.kind, anomaly.subject) == ("lost-append", ("u2",))


def test_acknowledged_without_storing_is_lost_without_any_read() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1", stored=())
    anomaly = only(h)
    assert (anomaly.kind, anomaly.subject) == ("lost-append", ("u1",))


def test_window_not_full_must_hold_everything() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    h.append(0.2, 0.3, "u2")
    h.recent(0.4, 0.5, 5, "u2")
    assert h.kinds() == ["lost-append"]


def test_window_holding_an_older_message_must_hold_newer_ones() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    h.append(0.2, 0.3, "u2")
    h.append(0.4, 0.5, "u3")
    h.recent(0.6, 0.7, 2, "u1", "u3")
    assert "lost-append" in h.kinds()


def test_torn_batch_in_a_full_read() -> None:
    h = Builder()
    h.append(0.0, 1.0, "u1", "a1", "a2")
    h.read(0.5, 0.6, "u1", "a2")
    anomaly = only(h)
    assert anomaly.kind == "torn-batch"
    assert anomaly.subject == ("u1", "a1", "a2")


def test_torn_batch_split_by_another() -> None:
    h = Builder()
    h.append(0.0, 1.0, "u1", "a1")
    h.append(0.0, 1.0, "u2")
    h.read(1.5, 1.6, "u1", "u2", "a1")
    assert set(h.kinds()) == {"torn-batch"}


def test_window_may_cut_a_batch_only_at_its_oldest_edge_when_full() -> None:
    cut_newest = Builder()
    cut_newest.append(0.0, 0.1, "u1", "a1", "a2")
    cut_newest.recent(0.2, 0.3, 2, "u1", "a1")
    assert "torn-batch" in cut_newest.kinds()
    not_full = Builder()
    not_full.append(0.0, 0.1, "u1", "a1", "a2")
    not_full.recent(0.2, 0.3, 5, "a1", "a2")
    assert "torn-batch" in not_full.kinds()


def test_duplicate_in_a_read() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    h.append(0.2, 0.3, "u1", stored=("u1",))  # the retry claims to store it again
    h.read(0.4, 0.5, "u1", "u1")
    assert set(h.kinds()) == {"duplicate", "retry-not-idempotent"}


def test_reorder_of_one_writers_messages() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    h.append(0.2, 0.3, "u2")
    h.read(0.4, 0.5, "u2", "u1")
    anomaly = only(h)
    assert anomaly.kind == "reorder"
    assert set(anomaly.subject) == {"u1", "u2"}


def test_reads_that_disagree_on_the_order_of_concurrent_appends() -> None:
    h = Builder()
    h.append(0.0, 1.0, "u1", process="w0")
    h.append(0.0, 1.0, "u2", process="w1")
    h.read(1.1, 1.2, "u1", "u2")
    h.read(1.3, 1.4, "u2", "u1")
    anomaly = only(h)
    assert anomaly.kind == "inconsistent-order"
    assert set(anomaly.subject) == {"u1", "u2"}


def test_read_of_a_future_write() -> None:
    h = Builder()
    h.read(0.0, 0.1, "u1")
    h.append(0.2, 0.3, "u1")
    anomaly = only(h)
    assert (anomaly.kind, anomaly.subject) == ("future-read", ("u1",))


def test_unknown_outcome_half_applied() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1", "a1", outcome=UNKNOWN)
    h.read(0.2, 0.3, "u1")
    anomaly = only(h)
    assert anomaly.kind == "half-applied"


def test_unknown_outcome_then_retry_is_exactly_once() -> None:
    fine = Builder()
    fine.append(0.0, 0.1, "u1", "a1", outcome=UNKNOWN)
    fine.read(0.2, 0.3)  # not applied, or not yet visible: both are allowed
    fine.append(0.4, 0.5, "u1", "a1", stored=())  # the retry found it applied after all
    fine.read(0.6, 0.7, "u1", "a1")
    assert fine.kinds() == []
    twice = Builder()
    twice.append(0.0, 0.1, "u1", outcome=UNKNOWN)
    twice.append(0.4, 0.5, "u1", stored=("u1",))
    twice.read(0.6, 0.7, "u1", "u1")
    assert twice.kinds() == ["duplicate"]


def test_unknown_outcome_may_apply_after_the_call_ended() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1", outcome=UNKNOWN)  # timed out, applied by the server later
    h.delete(0.2, 0.3)
    h.read(0.4, 0.5, "u1")
    assert h.kinds() == []


def test_failed_write_that_shows_up_is_a_phantom() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1", outcome=FAILED)
    h.read(0.2, 0.3, "u1")
    h.read(0.2, 0.3, "x", conversation="other")
    assert h.kinds() == ["phantom", "phantom"]


def test_message_back_after_a_certain_delete() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    h.delete(0.2, 0.3)
    h.read(0.4, 0.5, "u1")
    assert h.kinds() == ["resurrected"]


def test_stale_and_missing_system_message() -> None:
    stale = Builder()
    stale.append(0.0, 0.1, "s1")
    stale.append(0.2, 0.3, "s2")
    stale.system(0.4, 0.5, "s1")
    assert stale.kinds() == ["stale-system-message"]
    missing = Builder()
    missing.append(0.0, 0.1, "s1")
    missing.system(0.4, 0.5, None)
    assert missing.kinds() == ["lost-append"]
    concurrent = Builder()
    concurrent.append(0.0, 1.0, "s1")
    concurrent.append(0.0, 1.0, "s2")
    concurrent.system(1.1, 1.2, "s1")  # either may have been stored last
    assert concurrent.kinds() == []


# -- the report ------------------------------------------------------------------------------------


def test_failure_is_shrunk_to_the_operations_that_prove_it() -> None:
    h = Builder(ttl=1.0)
    t = 0.0
    for i in range(40):  # noise: another conversation, reads, and writes that keep c alive
        h.append(t, t + 0.01, f"n{i}", conversation="noise")
        h.read(t + 0.02, t + 0.03, *(f"n{j}" for j in range(i + 1)), conversation="noise")
        h.append(t, t + 0.01, f"k{i}")
        t += 0.1
    lost = h.append(0.55, 0.56, "lost")
    h.read(t, t + 0.01, *(f"k{i}" for i in range(40)))
    with pytest.raises(HistoryCheckError) as caught:
        check_history(h.history())
    error = caught.value
    assert [a.kind for a in error.anomalies] == ["lost-append"]
    indexes = [o.index for o in error.shrunk]
    assert lost in indexes
    # The append, the read, and only the writes that rule out expiry in between remain.
    assert 2 <= len(error.shrunk) <= 12
    assert all(o.conversation == "c" for o in error.shrunk)
    text = str(error)
    assert "seed 7" in text
    assert "CHATMEM_CHECKER_SEED=7" in text
    assert "lost-append" in text
    assert "n39" not in text

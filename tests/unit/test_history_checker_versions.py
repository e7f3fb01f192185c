"""The history checker's version rules on hand-built histories: each anomaly, and its excuses."""

from __future__ import annotations

import pytest

from chatmem.testing import HistoryCheckError, Outcome, check_history
from tests.unit.test_history_checker import Builder, only

CONFLICT = Outcome.CONFLICT


# -- valid histories ---------------------------------------------------------------------------


def test_one_winner_per_version_is_accepted() -> None:
    h = Builder()
    r0 = h.version(0.0, 0.1, 0, process="w0")
    r1 = h.version(0.0, 0.1, 0, process="w1")
    h.checked(0.2, 0.3, r0, "u1", "a1", process="w0")
    h.checked(0.2, 0.3, r1, "u2", process="w1", outcome=CONFLICT)
    h.read(0.4, 0.5, "u1", "a1")
    r2 = h.version(0.6, 0.7, 1, process="w1")  # the loser reads again and wins
    h.checked(0.8, 0.9, r2, "u3", process="w1")
    h.read(1.0, 1.1, "u1", "a1", "u3")
    check_history(h.history())


def test_an_append_concurrent_with_the_version_read_may_have_come_before_it() -> None:
    h = Builder()
    read = h.version(0.0, 0.3, 0)
    h.append(0.1, 0.2, "u1", process="w1")  # inside the read: the read may have seen it
    h.checked(0.4, 0.5, read, "u2")
    assert h.kinds() == []


def test_an_append_that_stored_nothing_did_not_move_the_version() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    read = h.version(0.2, 0.3, 1)
    h.append(0.4, 0.5, "u1", stored=(), process="w1")  # a retry: already stored
    h.checked(0.6, 0.7, read, "u2")
    assert h.kinds() == []


def test_a_delete_in_between_excuses_two_wins_at_one_version() -> None:
    h = Builder()
    r0 = h.version(0.0, 0.1, 0, process="w0")
    h.checked(0.2, 0.3, r0, "u1", process="w0")
    h.delete(0.4, 0.5, outcome=Outcome.UNKNOWN)  # may have taken effect: back to version 0
    r1 = h.version(0.6, 0.7, 0, process="w1")
    h.checked(0.8, 0.9, r1, "u2", process="w1")
    assert h.kinds() == []


def test_expiry_in_between_excuses_two_wins_at_one_version() -> None:
    def history(ttl: float | None) -> Builder:
        h = Builder(ttl=ttl)
        r0 = h.version(0.0, 0.1, 0, process="w0")
        h.checked(0.2, 0.3, r0, "u1", process="w0")
        r1 = h.version(1.5, 1.6, 0, process="w1")  # idle for the ttl: expired, version 0
        h.checked(1.7, 1.8, r1, "u2", process="w1")
        return h

    assert history(1.0).kinds() == []
    assert history(None).kinds() == ["double-version-win"]


def test_an_expiry_right_after_the_version_read_excuses_a_win() -> None:
    # The idle time that expires the conversation began before the version was read.
    h = Builder(ttl=1.0)
    h.append(0.0, 0.01, "u1")
    read = h.version(0.9, 0.95, 1)
    h.append(1.1, 1.15, "u2", process="w1")  # expired at 1.0: u2 makes it version 1 again
    h.checked(1.2, 1.25, read, "u3")
    assert h.kinds() == []


# -- anomalies ------------------------------------------------------------------------------------


def test_two_wins_at_one_version() -> None:
    h = Builder()
    r0 = h.version(0.0, 0.1, 0, process="w0")
    r1 = h.version(0.0, 0.1, 0, process="w1")
    a = h.checked(0.2, 0.3, r0, "u1", "a1", process="w0")
    b = h.checked(0.2, 0.3, r1, "u2", process="w1")
    h.read(0.4, 0.5, "u1", "a1", "u2")
    anomaly = only(h)
    assert anomaly.kind == "double-version-win"
    assert anomaly.operations == (a, b)
    assert set(anomaly.subject) == {"u1", "a1", "u2"}
    assert "version 0" in anomaly.explanation


def test_a_win_after_another_append_moved_the_version() -> None:
    h = Builder()
    h.append(0.0, 0.1, "u1")
    read = h.version(0.2, 0.3, 1, process="w0")
    mover = h.append(0.4, 0.5, "u2", process="w1")
    stale = h.checked(0.6, 0.7, read, "u3", process="w0")
    h.read(0.8, 0.9, "u1", "u2", "u3")
    anomaly = only(h)
    assert anomaly.kind == "stale-version-win"
    assert anomaly.operations == (read, mover, stale)
    assert anomaly.subject == ("u3",)


def test_a_refused_append_that_shows_up() -> None:
    h = Builder()
    read = h.version(0.0, 0.1, 0, process="w0")
    h.append(0.2, 0.3, "u1", process="w1")
    refused = h.checked(0.4, 0.5, read, "u2", "a2", process="w0", outcome=CONFLICT)
    shown = h.read(0.6, 0.7, "u1", "u2", "a2")
    anomaly = only(h)
    assert anomaly.kind == "refused-append-stored"
    assert anomaly.subject == ("u2", "a2")
    assert anomaly.operations == (refused, shown)


def test_the_report_names_the_version_and_the_read_it_came_from() -> None:
    h = Builder()
    r0 = h.version(0.0, 0.1, 3, process="w0")
    r1 = h.version(0.0, 0.1, 3, process="w1")
    h.checked(0.2, 0.3, r0, "u1", process="w0", positions=(4,))
    h.checked(0.2, 0.3, r1, "u2", process="w1", positions=(5,))
    with pytest.raises(HistoryCheckError) as caught:
        check_history(h.history())
    text = str(caught.value)
    assert "double-version-win in conversation c" in text
    assert "expected_version=3 (read by #0) ok stored [u1] at positions [4]" in text
    assert "find_version c ok -> version 3" in text

"""Window selection: Spring AI 2.0's documented behaviour, where we differ, and properties."""

from __future__ import annotations

from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from chatmem import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.window import repair_tool_sequence, select_window, split_turns, split_units
from tests.support.properties import property_settings


def user(text: str) -> UserMessage:
    return UserMessage(text)


def answer(text: str) -> AssistantMessage:
    return AssistantMessage(text)


def call(*ids: str, text: str = "") -> AssistantMessage:
    return AssistantMessage(
        text, tool_calls=[ToolCall(id=i, name="t", arguments="{}") for i in ids]
    )


def result(*ids: str) -> ToolResponseMessage:
    return ToolResponseMessage(
        responses=[ToolResponse(id=i, name="t", response_data=i) for i in ids]
    )


def texts(messages: list[Message]) -> list[str]:
    return [getattr(m, "text", "") or f"<{m.type}>" for m in messages]


# -- whole turns (Spring AI 2.0 semantics) --


def test_whole_turns_fit_within_budget() -> None:
    history: list[Message] = [user("u1"), answer("a1"), user("u2"), answer("a2"), user("u3")]
    assert texts(select_window(history, budget=3)) == ["u2", "a2", "u3"]
    assert texts(select_window(history, budget=4)) == ["u2", "a2", "u3"]  # upper bound
    assert texts(select_window(history, budget=5)) == texts(history)


def test_never_splits_a_turn() -> None:
    history: list[Message] = [user("u1"), answer("a1"), answer("a1b"), user("u2"), answer("a2")]
    assert texts(select_window(history, budget=4)) == ["u2", "a2"]


def test_incomplete_leading_turn_is_dropped() -> None:
    fetched: list[Message] = [answer("tail of older turn"), user("u2"), answer("a2")]
    assert texts(select_window(fetched, budget=3, history_complete=False)) == ["u2", "a2"]
    assert texts(select_window(fetched, budget=3, history_complete=True)) == ["u2", "a2"]
    only_answers: list[Message] = [answer("a"), answer("b")]
    assert texts(select_window(only_answers, budget=5)) == ["a", "b"]
    assert select_window(only_answers, budget=5, history_complete=False) == []


def test_split_turns_and_units() -> None:
    history: list[Message] = [answer("pre"), user("u"), call("x", "y"), result("x"), result("y")]
    assert split_turns(history) == [[0], [1, 2, 3, 4]]
    assert split_units(history, [2, 3, 4]) == [[2, 3, 4]]


# -- where we differ: an oversized newest turn --


def test_oversized_turn_keeps_user_message_and_newest_units() -> None:
    turn: list[Message] = [
        user("q"),
        call("a"),
        result("a"),
        call("b"),
        result("b"),
        answer("done"),
    ]
    # Spring AI would send nothing here; we keep the question and what fits of the newest units.
    assert texts(select_window(turn, budget=4)) == ["q", "<assistant>", "<tool>", "done"]
    assert texts(select_window(turn, budget=2)) == ["q", "done"]
    assert texts(select_window(turn, budget=1)) == ["q"]


def test_oversized_turn_never_splits_a_tool_unit() -> None:
    turn: list[Message] = [user("q"), call("a", "b"), result("a"), result("b")]
    assert texts(select_window(turn, budget=3)) == ["q"]


def test_user_message_kept_even_if_alone_over_budget() -> None:
    assert texts(select_window([user("huge")], budget=0)) == ["huge"]


# -- repair --


def test_repair_drops_orphan_tool_responses() -> None:
    assert texts(repair_tool_sequence([result("x"), user("u"), answer("a")])) == ["u", "a"]


def test_repair_strips_unanswered_calls_unless_last() -> None:
    unanswered: list[Message] = [user("u"), call("x", text="let me check"), user("u2")]
    repaired = repair_tool_sequence(unanswered)
    assert texts(repaired) == ["u", "let me check", "u2"]
    assert isinstance(repaired[1], AssistantMessage)
    assert repaired[1].tool_calls == []
    pending: list[Message] = [user("u"), call("x")]
    assert repair_tool_sequence(pending) == pending
    assert texts(repair_tool_sequence(pending, allow_pending_tool_call=False)) == ["u"]


def test_repair_matches_by_id_and_keeps_partial_answers() -> None:
    sequence: list[Message] = [user("u"), call("x", "y"), result("y"), result("zz"), answer("a")]
    repaired = repair_tool_sequence(sequence)
    assert isinstance(repaired[1], AssistantMessage)
    assert [c.id for c in repaired[1].tool_calls] == ["y"]
    assert isinstance(repaired[2], ToolResponseMessage)
    assert [r.id for r in repaired[2].responses] == ["y"]
    assert len(repaired) == 4


def test_repair_rejects_response_separated_from_its_call() -> None:
    sequence: list[Message] = [call("x"), user("u"), result("x")]
    assert texts(repair_tool_sequence(sequence)) == ["u"]


def test_repair_drops_duplicate_answers() -> None:
    repaired = repair_tool_sequence([user("u"), call("x"), result("x"), result("x")])
    assert texts(repaired) == ["u", "<assistant>", "<tool>"]


# -- properties --

_counter = iter(range(10**9))


@st.composite
def turns(draw: st.DrawFn) -> list[Message]:
    """A turn: a user message, then answers, tool-call units (some broken), orphans."""
    messages: list[Message] = [user(f"u{next(_counter)}")]
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["answer", "unit", "unanswered", "partial", "orphan"]))
        ids = [f"c{next(_counter)}" for _ in range(draw(st.integers(1, 3)))]
        if kind == "answer":
            messages.append(answer("a"))
        elif kind == "unit":
            messages.append(call(*ids))
            messages.extend(result(i) for i in ids)
        elif kind == "unanswered":
            messages.append(call(*ids))
        elif kind == "partial":
            messages.append(call(*ids))
            messages.append(result(ids[0]))
        else:
            messages.append(result(ids[0]))
    return messages


histories = st.tuples(
    st.lists(turns(), max_size=8),
    st.booleans(),  # start with a headless assistant message
).map(lambda t: ([answer("headless")] if t[1] else []) + [m for turn in t[0] for m in turn])


def assert_valid_sequence(window: list[Message]) -> None:
    for index, message in enumerate(window):
        if isinstance(message, ToolResponseMessage):
            j = index - 1
            while j >= 0 and isinstance(window[j], ToolResponseMessage):
                j -= 1
            assert j >= 0, "tool response without a call"
            caller = window[j]
            assert isinstance(caller, AssistantMessage)
            called = {c.id for c in caller.tool_calls}
            assert {r.id for r in message.responses} <= called
        if isinstance(message, AssistantMessage) and message.tool_calls:
            run_ids = set()
            j = index + 1
            while j < len(window) and isinstance(window[j], ToolResponseMessage):
                run_ids |= {r.id for r in window[j].responses}  # type: ignore[union-attr]
                j += 1
            if index != len(window) - 1:
                assert {c.id for c in message.tool_calls} <= run_ids, "unanswered tool call"


@property_settings(400, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories, budget=st.integers(1, 30))
def test_window_properties(history: list[Message], budget: int) -> None:
    window = select_window(history, budget=budget)
    assert_valid_sequence(window)
    ids = [m.id for m in history]
    positions = [ids.index(m.id) for m in window]
    assert positions == sorted(positions), "window keeps history order"
    if not window:
        return
    has_user = any(isinstance(m, UserMessage) for m in history)
    if has_user:
        assert isinstance(window[0], UserMessage), "window starts at a user message"
    first = positions[0]
    users_in_window = [m for m in window if isinstance(m, UserMessage)]
    if len(window) <= budget and len(users_in_window) >= 1:
        # Whole turns: every user message from the first selected one onwards is present.
        later_users = [m.id for m in history[first:] if isinstance(m, UserMessage)]
        if len(later_users) == len(users_in_window):
            assert [m.id for m in users_in_window] == later_users
    if len(users_in_window) > 1:
        assert len(window) <= budget, "several turns only when they fit"
        # Whole turns: everything between the first selected user message and the end is
        # selected, except what repair removed.
        kept = set(positions)
        dropped = [history[i] for i in range(first, len(history)) if i not in kept]
        assert all(not isinstance(m, UserMessage) for m in dropped)
    else:
        assert len(window) <= max(budget, 1), "the oversized case keeps the user message only"


@property_settings(200)
@given(history=histories)
def test_repair_is_idempotent(history: list[Message]) -> None:
    once = repair_tool_sequence(history)
    assert repair_tool_sequence(once) == once
    assert_valid_sequence(once)


@property_settings(400, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=histories,
    budget=st.integers(0, 30),
    complete=st.booleans(),
    pending=st.booleans(),
)
def test_counting_by_message_selects_what_sizing_each_message_selects(
    history: list[Message], budget: int, complete: bool, pending: bool
) -> None:
    # The default size (one per message) takes a backward scan; any other size function
    # takes the turn-by-turn path. Both must pick the same window.
    options = {"history_complete": complete, "allow_pending_tool_call": pending}
    counted = select_window(history, budget=budget, **options)
    sized = select_window(history, budget=budget, size=lambda _: 1, **options)
    assert counted == sized

"""Window selection: which stored messages the model sees. Pure functions, no I/O.

Both chat memories (and both of their twins) call :func:`select_window`; the property tests
exercise it directly. The rules, in order:

1. **Whole turns.** A turn starts at a :class:`~chatmem.messages.UserMessage` and runs up to
   the next one. The window is the longest suffix of whole turns whose total size fits the
   budget (the budget left after the system message).
2. **Oversized newest turn.** If the newest turn alone does not fit, Spring AI sends an empty
   window. chatmem keeps the turn's user message and the longest suffix of the turn's *units*
   that fits: a unit is an assistant message with tool calls together with the tool responses
   that answer it, or any other single message. The user message is kept even if it alone is
   over budget: a request without the question is useless.
3. **Repair.** The result is made valid for OpenAI and Anthropic: every tool response follows
   the assistant message that made its call, in the run of tool messages right after it
   (matched by call id, not by position); a tool call without all of its responses is dropped
   unless its assistant message is the last message (a turn in progress).

An assistant message is always kept or left whole with its reasoning parts and provider items;
when the repair drops calls from it, they stay in their order (see ``ReasoningPart.index``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from chatmem.messages import (
    AssistantMessage,
    Message,
    MessageType,
    ProviderItem,
    ReasoningPart,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

__all__ = ["count_one", "repair_tool_sequence", "select_window", "split_turns", "split_units"]

M = TypeVar("M", bound=Message)

# The hot loops test a message's kind by its ``type`` field: every message class fixes it (a
# Literal), and it costs a third of an isinstance check against a pydantic model class.
_USER = MessageType.USER
_ASSISTANT = MessageType.ASSISTANT
_TOOL = MessageType.TOOL


def count_one(message: Message) -> int:
    """The size of a message in a message window: 1, whatever it holds.

    :func:`select_window` recognises it and counts groups by their length.

    Args:
        message: The message.
    """
    return 1


_one = count_one


def split_turns(messages: Sequence[Message]) -> list[list[int]]:
    """Group message indices into turns, each starting at a user message.

    Messages before the first user message form a leading group of their own.

    Args:
        messages: Non-system messages, oldest first.

    Returns:
        Lists of indices into ``messages``, oldest turn first.
    """
    turns: list[list[int]] = []
    current: list[int] = []
    for index, message in enumerate(messages):
        if message.type == _USER or not turns:
            current = [index]
            turns.append(current)
        else:
            current.append(index)
    return turns


def split_units(messages: Sequence[Message], indices: Sequence[int]) -> list[list[int]]:
    """Group indices into units: a tool-calling assistant message with its answers, or one message.

    A tool response joins the unit of the nearest earlier assistant message that called one of
    its ids; otherwise it is a unit of its own (an orphan, which repair removes).

    Args:
        messages: The messages the indices refer to.
        indices: Indices of one turn's messages after its user message, in order.

    Returns:
        Units as lists of indices, ordered by their first message.
    """
    units: list[list[int]] = []
    unit_of_call: dict[str, int] = {}
    for index in indices:
        message = messages[index]
        if isinstance(message, ToolResponseMessage):
            owners = {unit_of_call[r.id] for r in message.responses if r.id in unit_of_call}
            if owners:
                units[max(owners)].append(index)
                continue
        units.append([index])
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                unit_of_call[call.id] = len(units) - 1
    return units


def _suffix_within(
    groups: list[list[int]], size_of: Callable[[list[int]], int], budget: int
) -> int:
    """Return how many groups, counted from the end, fit the budget together."""
    total = 0
    count = 0
    for group in reversed(groups):
        total += size_of(group)
        if total > budget:
            break
        count += 1
    return count


def select_window(
    messages: Sequence[M],
    *,
    budget: int,
    size: Callable[[Message], int] = _one,
    history_complete: bool = True,
    allow_pending_tool_call: bool = True,
) -> list[M]:
    """Select the window from the newest non-system messages.

    Args:
        messages: Candidate non-system messages, oldest first: the newest part of the history
            (or all of it).
        budget: What the window may hold, in the unit of ``size``, after the system message.
        size: The cost of one message: 1 for a message window, tokens for a token window.
        history_complete: Whether ``messages`` starts at the beginning of the history. A
            leading run before the first user message is never selected when a user message
            follows; it is treated as a turn only in a complete history with no user message.
        allow_pending_tool_call: Keep an unanswered tool call when it is the last message.

    Returns:
        The window, oldest first, after the repair pass.
    """
    if not messages:
        return []
    if size is count_one:
        # A message window: the window starts at the oldest user message whose turn and
        # all later ones fit, which a backward scan over at most ``budget`` messages finds.
        end = len(messages)
        start = -1
        for index in range(end - 1, max(end - budget, 0) - 1, -1):
            if messages[index].type == _USER:
                start = index
        if start >= 0:
            return repair_tool_sequence(
                messages[start:], allow_pending_tool_call=allow_pending_tool_call
            )
        # No turn start within the budget: the oversized-turn and headless rules below.
    turns = split_turns(messages)
    headless = messages[turns[0][0]].type != _USER
    if headless and (len(turns) > 1 or not history_complete):
        # Messages before the first user message are either the tail of an older turn whose
        # start was not read, or a history that began without a user message. Either way the
        # window must start at a user message when one exists, so they are never selected.
        turns = turns[1:]
    if not turns:
        return []

    def size_of(group: list[int]) -> int:
        return sum(size(messages[i]) for i in group)

    count = _suffix_within(turns, size_of, budget)
    if count:
        chosen = [i for turn in turns[-count:] for i in turn]
    else:
        chosen = _oversized_turn(messages, turns[-1], size_of, budget)
    return repair_tool_sequence(
        [messages[i] for i in chosen], allow_pending_tool_call=allow_pending_tool_call
    )


def _oversized_turn(
    messages: Sequence[Message],
    turn: list[int],
    size_of: Callable[[list[int]], int],
    budget: int,
) -> list[int]:
    head, rest = turn[0], turn[1:]
    if not isinstance(messages[head], UserMessage):
        # A turn without a user message (history that starts with the assistant): all of it
        # is units.
        head, rest = -1, turn
    left = budget - (size_of([head]) if head >= 0 else 0)
    units = split_units(messages, rest)
    count = _suffix_within(units, size_of, max(left, 0))
    kept = sorted(i for unit in units[len(units) - count :] for i in unit) if count else []
    return ([head] if head >= 0 else []) + kept


def _pairs_tools(messages: Sequence[Message]) -> bool:
    """Whether any message is a tool response or an assistant message with tool calls."""
    for message in messages:
        kind = message.type
        if kind == _TOOL or (kind == _ASSISTANT and message.tool_calls):  # type: ignore[union-attr]
            return True
    return False


def repair_tool_sequence(messages: Sequence[M], *, allow_pending_tool_call: bool = True) -> list[M]:
    """Make a message sequence valid for providers that check tool-call pairing.

    Keeps a tool response only if it answers a call of the assistant message right before
    its run of tool messages (each call answered once). Drops tool calls that are not answered
    unless ``allow_pending_tool_call`` and their assistant message is the last message; an
    assistant message left with no text, calls or media is dropped. Other messages pass
    through unchanged.

    Args:
        messages: Non-system messages, oldest first.
        allow_pending_tool_call: Keep an unanswered call in the last message.

    Returns:
        The repaired sequence.
    """
    if not _pairs_tools(messages):
        return list(messages)  # no tool call and no tool response: nothing to repair
    result: list[M] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, ToolResponseMessage):
            continue  # not right after a tool-calling assistant message: an orphan
        if not (isinstance(message, AssistantMessage) and message.tool_calls):
            result.append(message)
            continue
        call_ids = {call.id for call in message.tool_calls}
        answered: set[str] = set()
        run: list[M] = []
        while index < len(messages) and isinstance(messages[index], ToolResponseMessage):
            tool_message = messages[index]
            assert isinstance(tool_message, ToolResponseMessage)
            index += 1
            kept = []
            for response in tool_message.responses:
                if response.id in call_ids and response.id not in answered:
                    answered.add(response.id)
                    kept.append(response)
            if len(kept) == len(tool_message.responses):
                run.append(tool_message)
            elif kept:
                run.append(tool_message.model_copy(update={"responses": kept}))
        pending_ok = allow_pending_tool_call and index == len(messages) and not run
        if answered != call_ids and not pending_ok:
            message = _keep_calls(message, answered)
            if not (message.text or message.tool_calls or message.media):
                continue  # nothing answered, so the run is empty too
        result.append(message)
        result.extend(run)
    return result


def _keep_calls(message: M, kept: set[str]) -> M:
    """The assistant message with only the tool calls in ``kept``, everything else intact.

    Its reasoning parts and provider items stay with it. Those placed by ``index`` among the
    message's parts keep their order relative to the text and the remaining calls: their
    indexes are renumbered as if the dropped calls had never been there.
    """
    assert isinstance(message, AssistantMessage)
    update: dict[str, Any] = {
        "tool_calls": [call for call in message.tool_calls if call.id in kept]
    }
    parts: list[ReasoningPart | ProviderItem] = [*message.reasoning, *message.provider_items]
    placed = [part for part in parts if part.index is not None]
    if placed:
        renumbered = _renumbered(message, placed, kept)
        update["reasoning"] = [renumbered.get(id(p), p) for p in message.reasoning]
        update["provider_items"] = [renumbered.get(id(p), p) for p in message.provider_items]
    return message.model_copy(update=update)


def _renumbered(
    message: AssistantMessage, placed: list[ReasoningPart | ProviderItem], kept: set[str]
) -> dict[int, ReasoningPart | ProviderItem]:
    """The placed parts whose index changes once the calls not in ``kept`` are gone, by id()."""
    content: list[str | ToolCall] = [message.text] if message.text else []
    content += message.tool_calls
    waiting = sorted(placed, key=lambda part: part.index or 0)
    # The parts in their original order: each placed part at its index, the text and then the
    # calls in the places left (a part whose index is past the end comes next).
    order: list[str | ToolCall | ReasoningPart | ProviderItem] = []
    while content or waiting:
        if waiting and ((waiting[0].index or 0) <= len(order) or not content):
            order.append(waiting.pop(0))
        else:
            order.append(content.pop(0))
    order = [part for part in order if not (isinstance(part, ToolCall) and part.id not in kept)]
    return {
        id(part): part.model_copy(update={"index": index})
        for index, part in enumerate(order)
        if isinstance(part, ReasoningPart | ProviderItem) and part.index != index
    }

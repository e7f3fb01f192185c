"""``chatmem demo``: a scripted conversation that shows memory at work, turn by turn.

No LLM is called. A scripted chat model (its replies are written below) stands in for one,
and a scripted summarizer for the model that writes the summary; everything else is the
real thing: the ChatClient runs the tool loop, the MessageChatMemoryAdvisor loads and saves
memory, a MessageWindowChatMemory picks the window, a SummarizingChatMemory folds the turns
that leave it into a running summary, and the repository (an SQLite file by default) stores
the history and the summary.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias
from uuid import uuid4

from rich.panel import Panel
from rich.text import Text

from chatmem import (
    CONVERSATION_ID,
    AssistantMessage,
    ChatClient,
    ChatMemoryLog,
    ConversationSummary,
    Message,
    MessageWindowChatMemory,
    SummarizingChatMemory,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    scoped_conversation_id,
    tool,
)
from chatmem.memory import SUMMARY_START
from chatmem.model import Prompt
from chatmem.testing import ScriptedChatModel, ScriptedReply
from chatmem.window import split_turns
from chatmem_advisors import MessageChatMemoryAdvisor
from chatmem_cli._common import console
from chatmem_cli._render import STYLES, describe, shorten, summary_panel

__all__ = ["MAX_MESSAGES", "run_demo"]

MAX_MESSAGES = 6
"""The demo's window: small, so that turns leave it (and are folded into the summary)."""

MAX_SUMMARY_TOKENS = 300
"""The summary's token budget in the demo: enough that nothing is cut."""

SYSTEM = "You are Q's assistant at MI6. Be brief."

_SAYS_NAME = re.compile(r"my name is ([A-Z][a-z]+(?: [A-Z][a-z]+)*)")
_SUMMARY_NAME = re.compile(r"user's name is ([A-Z][a-z]+(?: [A-Z][a-z]+)*)")


@tool
def weather(city: str) -> str:
    """Return today's weather in a city.

    Args:
        city: The city.
    """
    return {"Istanbul": "24 °C, clear"}.get(city, "12 °C, drizzle")


@tool
def gadget_status(gadget: str) -> str:
    """Return whether one of Q's gadgets is ready.

    Args:
        gadget: The gadget's name.
    """
    return f"{gadget}: ready, batteries full"


def _call(name: str, arguments: str) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(id=f"call_{uuid4().hex[:8]}", name=name, arguments=arguments)]
    )


def _summary_text(message: Message) -> str | None:
    """Return the summary a summarizing memory's section carries, or ``None``."""
    if not isinstance(message, UserMessage) or SUMMARY_START not in message.text:
        return None
    lines = message.text.splitlines()
    try:
        quoted = json.loads(lines[lines.index(SUMMARY_START) + 1])
    except (ValueError, IndexError):
        return None
    summary = quoted.get("summary") if isinstance(quoted, dict) else None
    return summary if isinstance(summary, str) else None


def _recall_name(prompt: Prompt) -> str:
    # The scripted model "knows" only what it was sent: it looks for the name in the prompt,
    # in the window's messages first, then in the summary of the turns that left it.
    summaries = [text for m in prompt.messages if (text := _summary_text(m)) is not None]
    for message in prompt.messages:
        if isinstance(message, UserMessage) and _summary_text(message) is None:
            found = _SAYS_NAME.search(message.text)
            if found:
                return f"You are {found.group(1)}."
    for summary in summaries:
        found = _SUMMARY_NAME.search(summary)
        if found:
            return (
                f"You are {found.group(1)}. I can't see your name in the window any more, "
                "but the summary of the earlier turns has it."
            )
    return (
        "I can't see your name in what I was sent: the turn where you told me has left the "
        "window. It is still in the stored history."
    )


def _summarize(prompt: Prompt) -> str:
    """The scripted summarizer: the previous summary, then one sentence per evicted message.

    It reads what a summarizing memory sends it: the previous summary and the evicted turns,
    as JSON lines (a tool call comes with its result).
    """
    lines = (prompt.messages[-1].text or "").splitlines()  # type: ignore[union-attr]
    try:
        previous: str = json.loads(lines[1])["summary"]
        entries: list[dict[str, Any]] = [json.loads(line) for line in lines[3:]]
    except (ValueError, IndexError, KeyError, TypeError):
        return "(the scripted summarizer could not read its input)"
    facts = [previous] if previous else []
    for entry in entries:
        text = entry.get("text") or ""
        if entry.get("role") == "user":
            found = _SAYS_NAME.search(text)
            facts.append(f"The user's name is {found.group(1)}." if found else f"Asked: {text}")
        elif entry.get("role") == "assistant":
            for call in entry.get("tool_calls") or []:
                facts.append(f"{call['name']}({call['arguments']}) returned {call['result']!r}.")
            if text:
                facts.append(f"Answered: {text.split('. ')[0].rstrip('.')}.")
        elif entry.get("role") == "tool":
            facts.append(f"{entry.get('name')} returned {entry.get('result')!r}.")
    return " ".join(facts)


Reply: TypeAlias = "ScriptedReply | Callable[[Prompt], ScriptedReply]"


def _turns() -> list[tuple[str, list[Reply]]]:
    """Return the user's lines and the scripted replies, one reply per model call."""
    return [
        ("Hi, my name is James Bond.", ["Good evening, Mr Bond."]),
        (
            "What's the weather in Istanbul?",
            [_call("weather", '{"city": "Istanbul"}'), "24 °C and clear in Istanbul."],
        ),
        ("What is my name?", [_recall_name]),
        (
            "Check my gadgets: the watch, the pen and the car.",
            [
                _call("gadget_status", '{"gadget": "watch"}'),
                _call("gadget_status", '{"gadget": "pen"}'),
                _call("gadget_status", '{"gadget": "car"}'),
                "All three gadgets are ready.",
            ],
        ),
        ("What is my name, again?", [_recall_name]),
    ]


class _Script:
    """Feeds the scripted model: fixed replies, or functions of the prompt."""

    def __init__(self) -> None:
        self.queue: deque[Reply] = deque()

    def __call__(self, prompt: Prompt) -> ScriptedReply:
        reply = self.queue.popleft()
        return reply(prompt) if callable(reply) else reply


@dataclass
class _Turn:
    number: int
    user_text: str
    prompts: list[Prompt]
    answer: str
    stored: list[Message]
    evicted: list[tuple[Message, str]]
    window: list[Message]
    summary_before: ConversationSummary | None
    summary_after: ConversationSummary | None
    summarizer_prompts: list[Prompt]


def _line(message: Message, prefix: str = "    ") -> Text:
    summary = _summary_text(message)
    if summary is not None:
        # The summary section: a quoted block in a user message; shown by what it carries.
        text = Text(prefix)
        text.append(f"{'summary':<10}", style="blue")
        text.append(shorten(summary, 70))
        return text
    name = message.type.value
    text = Text(prefix)
    text.append(f"{name:<10}", style=STYLES.get(name, ""))
    text.append(describe(message, 70))
    return text


def _turn_numbers(history: Sequence[Message]) -> dict[str, int]:
    chat = [m for m in history if not isinstance(m, SystemMessage)]
    numbers: dict[str, int] = {}
    for index, group in enumerate(split_turns(chat)):
        for position in group:
            numbers[chat[position].id] = index + 1
    return numbers


def _why(turn: int, user_in_window: bool) -> str:
    if user_in_window:
        return (
            f"turn {turn} alone is bigger than the window: its user message and newest units "
            "stay; the oldest tool call leaves together with its result"
        )
    return (
        f"turn {turn} no longer fits: the window keeps the newest whole turns within "
        f"max_messages={MAX_MESSAGES} (system message included)"
    )


def _evicted(
    before: list[Message], after: list[Message], new: list[Message], history: list[Message]
) -> list[tuple[Message, str]]:
    after_ids = {m.id for m in after}
    numbers = _turn_numbers(history)
    # A turn whose user message is still in the window lost only some of its units.
    partly_kept = {numbers[m.id] for m in after if isinstance(m, UserMessage) and m.id in numbers}
    gone = [m for m in [*before, *new] if m.id not in after_ids and m.id in numbers]
    return [(m, _why(numbers[m.id], numbers[m.id] in partly_kept)) for m in gone]


def _print_turn(turn: _Turn) -> None:
    console.rule(f"[bold]Turn {turn.number}[/]")
    console.print(Text.assemble(("user: ", "cyan bold"), turn.user_text))
    for call, prompt in enumerate(turn.prompts, start=1):
        label = f"  model call {call}: sent {len(prompt.messages)} message(s)"
        console.print(label, style="bold")
        for message in prompt.messages:
            console.print(_line(message))
        if sum(_summary_text(m) is None for m in prompt.messages) > MAX_MESSAGES:
            console.print(
                "    (over the window: the window bounds what memory returns; the turn in "
                "progress, with its tool calls and results, is always sent whole)",
                style="dim",
            )
    console.print(Text.assemble(("assistant: ", "green bold"), turn.answer))
    console.print(
        f"  stored this turn ({len(turn.stored)} appended, nothing rewritten):", style="bold"
    )
    for message in turn.stored:
        console.print(_line(message))
    if turn.evicted:
        console.print("  evicted from the window (still in the history):", style="bold")
        reasons: dict[str, list[Message]] = {}
        for message, reason in turn.evicted:
            reasons.setdefault(reason, []).append(message)
        for reason, messages in reasons.items():
            for message in messages:
                console.print(_line(message, "    - "))
            console.print(f"      why: {reason}", style="dim")
    else:
        console.print("  evicted from the window: nothing", style="dim")
    _print_folding(turn)
    console.print(f"  memory view now: {len(turn.window)} message(s)", style="dim")


def _entries(prompt: Prompt) -> int:
    """How many evicted entries a summarizer call was sent (its input's JSON lines)."""
    last = prompt.messages[-1]
    lines = last.text.splitlines() if isinstance(last, UserMessage) else []
    return max(0, len(lines) - 3)


def _print_folding(turn: _Turn) -> None:
    after = turn.summary_after
    if after is None or (turn.summary_before is not None and after == turn.summary_before):
        console.print(
            "  summary: unchanged (no whole turn has left the window since it was written)"
            if after is not None
            else "  summary: none yet (no whole turn has left the window)",
            style="dim",
        )
        return
    entries = sum(_entries(prompt) for prompt in turn.summarizer_prompts)
    calls = len(turn.summarizer_prompts)
    console.print(
        f"  folded into the summary: {calls} summarizer call{'s' if calls != 1 else ''}, sent "
        f"the previous summary and only the turns that left the window ({entries} "
        f"entr{'ies' if entries != 1 else 'y'}; a tool call travels with its result):",
        style="bold",
    )
    text = Text("    ")
    text.append(f"summary v{after.version}", style="blue")
    text.append(f" (covers up to position {after.covers}): ", style="dim")
    text.append(shorten(after.text, 400))
    console.print(text)


def run_demo(repository: ChatMemoryLog, url_for_humans: str) -> str:
    """Run the scripted conversation against ``repository`` and print every step.

    Args:
        repository: Where the conversation is stored.
        url_for_humans: The repository URL with secrets redacted, for the closing hint.

    Returns:
        The conversation id used.
    """
    conversation_id = scoped_conversation_id("demo", f"bond-{uuid4().hex[:8]}")
    summarizer = ScriptedChatModel(respond=_summarize)
    memory = SummarizingChatMemory(
        MessageWindowChatMemory(repository, max_messages=MAX_MESSAGES),
        summarizer,
        max_summary_tokens=MAX_SUMMARY_TOKENS,
        background=False,  # the summary is current before each turn returns, to print it
    )
    where = (
        "stored in the repository next to the history"
        if memory.durable
        else "kept in this process only (this repository does not store summaries)"
    )
    console.print(
        Panel(
            "[bold yellow]SCRIPTED MODEL[/]: no LLM is called. The model's replies are scripted "
            "in chatmem_cli/_demo.py, and it only 'knows' what it is sent; a scripted "
            "summarizer stands in for the model that writes the summary.\n"
            "Everything else is real: ChatClient (tool loop), MessageChatMemoryAdvisor, "
            f"MessageWindowChatMemory(max_messages={MAX_MESSAGES}) wrapped in a "
            "SummarizingChatMemory (turns that leave the window are folded into a running "
            f"summary, {where}) and the repository at {url_for_humans}.",
            title="chatmem demo",
        )
    )
    memory.add(conversation_id, SystemMessage(SYSTEM))
    script = _Script()
    model = ScriptedChatModel(respond=script)
    client = (
        ChatClient.builder(model)
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .default_tools(weather, gadget_status)
        .build()
    )
    console.print(f"Conversation {conversation_id!r}; system message stored: {SYSTEM!r}")
    for number, (user_text, replies) in enumerate(_turns(), start=1):
        script.queue.extend(replies)
        before = memory.get(conversation_id)
        summary_before = memory.find_summary(conversation_id)
        sent_before, summarized_before = len(model.prompts), len(summarizer.prompts)
        seen = _ids(repository, conversation_id)
        answer = (
            client.prompt()
            .user(user_text)
            .advisors(lambda a: a.param(CONVERSATION_ID, conversation_id))
            .call()
            .content()
        )
        history = _history(repository, conversation_id)
        stored = [m for m in history if m.id not in seen]
        after = memory.get(conversation_id)
        _print_turn(
            _Turn(
                number,
                user_text,
                model.prompts[sent_before:],
                answer,
                stored,
                _evicted(before, after, stored, history),
                after,
                summary_before,
                memory.find_summary(conversation_id),
                summarizer.prompts[summarized_before:],
            )
        )
    history = _history(repository, conversation_id)
    tools = sum(isinstance(m, ToolResponseMessage) for m in history)
    view = memory.get(conversation_id)
    summary = memory.find_summary(conversation_id)
    console.rule("[bold]Done")
    console.print(
        f"{len(history)} messages stored (the full history, {tools} tool results included); "
        f"the model's next request would carry {len(view)}: the system message, "
        f"{'the summary, ' if summary else ''}and the window.",
        soft_wrap=True,
    )
    if summary is not None:
        console.print(
            summary_panel(summary, f"The summary ({len(summarizer.prompts)} summarizer calls)")
        )
    console.print(
        f"See them: chatmem show {conversation_id} --max-messages {MAX_MESSAGES} "
        f"--url {url_for_humans}",
        soft_wrap=True,
    )
    memory.close()
    return conversation_id


def _history(repository: ChatMemoryLog, conversation_id: str) -> list[Message]:
    # The demo's conversation is small: one page holds it.
    return [s.message for s in repository.find_history(conversation_id, limit=1000)]


def _ids(repository: ChatMemoryLog, conversation_id: str) -> set[str]:
    return {m.id for m in _history(repository, conversation_id)}

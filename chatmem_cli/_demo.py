"""``chatmem demo``: a scripted conversation that shows memory at work, turn by turn.

No LLM is called. A scripted chat model (its replies are written below) stands in for one;
everything else is the real thing: the ChatClient runs the tool loop, the
MessageChatMemoryAdvisor loads and saves memory, a MessageWindowChatMemory picks the window,
and the repository (an SQLite file by default) stores the history.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias
from uuid import uuid4

from rich.panel import Panel
from rich.text import Text

from chatmem import (
    CONVERSATION_ID,
    AssistantMessage,
    ChatClient,
    ChatMemoryLog,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    scoped_conversation_id,
    tool,
)
from chatmem.model import Prompt
from chatmem.testing import ScriptedChatModel, ScriptedReply
from chatmem.window import split_turns
from chatmem_advisors import MessageChatMemoryAdvisor
from chatmem_cli._common import console
from chatmem_cli._render import STYLES, describe

__all__ = ["MAX_MESSAGES", "run_demo"]

MAX_MESSAGES = 8
"""The demo's window: small, so that turns leave it."""

SYSTEM = "You are Q's assistant at MI6. Be brief."


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


def _recall_name(prompt: Prompt) -> str:
    # The scripted model "knows" only what it was sent: it looks for the name in the prompt.
    for message in prompt.messages:
        if isinstance(message, UserMessage):
            found = re.search(r"my name is ([A-Z][a-z]+(?: [A-Z][a-z]+)*)", message.text)
            if found:
                return f"You are {found.group(1)}."
    return (
        "I can't see your name in what I was sent: the turn where you told me has left the "
        "window. It is still in the stored history."
    )


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


def _line(message: Message, prefix: str = "    ") -> Text:
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
        if len(prompt.messages) > MAX_MESSAGES:
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
    console.print(f"  memory view now: {len(turn.window)} message(s)", style="dim")


def run_demo(repository: ChatMemoryLog, url_for_humans: str) -> str:
    """Run the scripted conversation against ``repository`` and print every step.

    Args:
        repository: Where the conversation is stored.
        url_for_humans: The repository URL with secrets redacted, for the closing hint.

    Returns:
        The conversation id used.
    """
    console.print(
        Panel(
            "[bold yellow]SCRIPTED MODEL[/]: no LLM is called. The model's replies are scripted "
            "in chatmem_cli/_demo.py, and it only 'knows' what it is sent.\n"
            "Everything else is real: ChatClient (tool loop), MessageChatMemoryAdvisor, "
            f"MessageWindowChatMemory(max_messages={MAX_MESSAGES}) and the repository at "
            f"{url_for_humans}.",
            title="chatmem demo",
        )
    )
    conversation_id = scoped_conversation_id("demo", f"bond-{uuid4().hex[:8]}")
    memory = MessageWindowChatMemory(repository, max_messages=MAX_MESSAGES)
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
        sent_before = len(model.prompts)
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
            )
        )
    history = _history(repository, conversation_id)
    tools = sum(isinstance(m, ToolResponseMessage) for m in history)
    console.rule("[bold]Done")
    console.print(
        f"{len(history)} messages stored (the full history, {tools} tool results included); "
        f"the model's next request would carry {len(memory.get(conversation_id))}.\n"
        f"See both: chatmem show {conversation_id} --max-messages {MAX_MESSAGES} "
        f"--url {url_for_humans}",
        soft_wrap=True,
    )
    return conversation_id


def _history(repository: ChatMemoryLog, conversation_id: str) -> list[Message]:
    # The demo's conversation is small: one page holds it.
    return [s.message for s in repository.find_history(conversation_id, limit=1000)]


def _ids(repository: ChatMemoryLog, conversation_id: str) -> set[str]:
    return {m.id for m in _history(repository, conversation_id)}

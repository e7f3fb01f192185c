"""Rich rendering of messages: one table row per message, with types and tool calls."""

from __future__ import annotations

import json
import re

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chatmem import (
    AssistantMessage,
    ConversationSummary,
    EventMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    TokenUsage,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "STYLES",
    "UsageTotal",
    "content_cell",
    "created_cell",
    "describe",
    "message_table",
    "shorten",
    "summary_panel",
    "type_cell",
]

# Control characters other than newline and tab, shown as escapes: stored text must not
# drive the terminal.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

STYLES = {"system": "magenta", "user": "cyan", "assistant": "green", "tool": "yellow"}
"""Colour per message type."""


def shorten(text: str, width: int = 90) -> str:
    """Return ``text`` on one line, cut to ``width`` characters with an ellipsis.

    Args:
        text: Any text.
        width: The most characters kept.
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def describe(message: Message, width: int = 90) -> str:
    """Describe a message's content on one line: text, tool calls or tool results.

    Args:
        message: Any message.
        width: The most characters per part.
    """
    if isinstance(message, EventMessage):
        return f"[{message.event_type}] " + shorten(
            json.dumps(message.payload, ensure_ascii=False, separators=(",", ":")), width
        )
    if isinstance(message, ToolResponseMessage):
        return "; ".join(
            f"{r.name}#{r.id} -> {shorten(r.response_data, width)}" for r in message.responses
        )
    parts = [shorten(message.text, width)] if message.text else []
    if isinstance(message, AssistantMessage) and (message.reasoning or message.provider_items):
        # What the model thought comes first, as it came before the answer.
        parts[:0] = [_reasoning(part, width) for part in message.reasoning] + [
            f"({item.provider} {item.type} item)" for item in message.provider_items
        ]
    if isinstance(message, AssistantMessage) and message.tool_calls:
        parts += [f"call {c.name}#{c.id}({shorten(c.arguments, 40)})" for c in message.tool_calls]
    if isinstance(message, UserMessage | AssistantMessage) and message.media:
        parts.append(f"[{len(message.media)} media]")
    if isinstance(message, SystemMessage):
        parts = [shorten(message.text, width)]
    return " | ".join(parts)


def _reasoning(part: ReasoningPart, width: int) -> str:
    """A reasoning part, marked as one, its text cut to half the width."""
    mark = ", ".join(
        word for word in ("reasoning", part.provider, "redacted" if part.redacted else "") if word
    )
    return f"({mark}) {shorten(part.text, max(width // 2, 10))}" if part.text else f"({mark})"


def content_cell(message: Message, width: int = 90) -> Text:
    r"""Return :func:`describe` as plain text, never read as markup.

    Control characters other than newline and tab are shown as ``\xNN`` escapes.

    Args:
        message: Any message.
        width: The most characters per part.
    """
    return Text(_CONTROL.sub(_escaped, describe(message, width)))


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


class UsageTotal:
    """The token usage of a conversation's answers, summed."""

    def __init__(self) -> None:
        self.answers = 0
        """How many messages reported usage."""
        self.total = TokenUsage()
        """The sum of their usage."""

    def add(self, message: Message) -> None:
        """Add a message's usage, if it reports one.

        Args:
            message: Any message.
        """
        usage = getattr(message, "usage", None)
        if usage is None:
            return
        self.answers += 1
        self.total = TokenUsage(
            **{
                name: getattr(self.total, name) + getattr(usage, name)
                for name in TokenUsage.model_fields
            }
        )

    def line(self) -> str | None:
        """Return the sum on one line, or ``None`` when no message reported usage."""
        if not self.answers:
            return None
        t = self.total
        return (
            f"Token usage of {self.answers} answer(s): {t.input_tokens} input "
            f"({t.cache_read_tokens} cache read, {t.cache_write_tokens} cache write), "
            f"{t.output_tokens} output ({t.reasoning_tokens} reasoning)."
        )


def message_table(title: str, *, first: str = "pos", marks: bool = False) -> Table:
    """Return an empty table with the standard message columns.

    Args:
        title: The table's title.
        first: The first column's heading: ``pos`` for stored positions, ``#`` for order.
        marks: Include an "in memory" column.
    """
    table = Table(title=title, title_justify="left", expand=False, show_lines=False)
    table.add_column(first, justify="right", style="dim")
    if marks:
        table.add_column("mem", justify="center")
    table.add_column("type")
    table.add_column("created (UTC)", style="dim", no_wrap=True)
    table.add_column("content", overflow="fold")
    return table


def type_cell(message: Message) -> Text:
    """Return the coloured type name of a message.

    Args:
        message: Any message.
    """
    name = message.type.value
    return Text(name, style=STYLES.get(name, ""))


def created_cell(message: Message) -> str:
    """Return the message's creation time to the second.

    Args:
        message: Any message.
    """
    return message.created_at.strftime("%Y-%m-%d %H:%M:%S")


def summary_panel(summary: ConversationSummary, title: str) -> Panel:
    r"""Return a conversation summary's text in a box, as stored (never read as markup).

    Control characters other than newline and tab are shown as ``\xNN`` escapes.

    Args:
        summary: The stored summary.
        title: The box's title.
    """
    visible = _CONTROL.sub(_escaped, summary.text)
    body = Text(visible) if visible else Text("(empty)", style="dim")
    return Panel(
        body,
        title=Text(title, style="bold"),
        title_align="left",
        subtitle=Text(f"version {summary.version}, covers up to position {summary.covers}"),
        subtitle_align="left",
        border_style="blue",
        expand=False,
    )

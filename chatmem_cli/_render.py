"""Rich rendering of messages: one table row per message, with types and tool calls."""

from __future__ import annotations

import re

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chatmem import (
    AssistantMessage,
    ConversationSummary,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "STYLES",
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
    if isinstance(message, ToolResponseMessage):
        return "; ".join(
            f"{r.name}#{r.id} -> {shorten(r.response_data, width)}" for r in message.responses
        )
    parts = [shorten(message.text, width)] if message.text else []
    if isinstance(message, AssistantMessage) and message.tool_calls:
        parts += [f"call {c.name}#{c.id}({shorten(c.arguments, 40)})" for c in message.tool_calls]
    if isinstance(message, UserMessage | AssistantMessage) and message.media:
        parts.append(f"[{len(message.media)} media]")
    if isinstance(message, SystemMessage):
        parts = [shorten(message.text, width)]
    return " | ".join(parts)


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
    visible = _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", summary.text)
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

"""``conversations`` and ``show``: look at what is stored and what the model would get."""

from __future__ import annotations

from collections.abc import Iterator

from rich.table import Table

from chatmem import (
    AssistantMessage,
    ChatMemoryLog,
    Message,
    MessageWindowChatMemory,
    SummaryStore,
    SystemMessage,
    TokenWindowChatMemory,
    owner_of,
)
from chatmem_cli._common import console
from chatmem_cli._render import (
    UsageTotal,
    content_cell,
    created_cell,
    message_table,
    summary_panel,
    type_cell,
)
from chatmem_repositories.settings import ChatMemorySettings, MemoryKind

__all__ = ["list_page", "show_conversation"]


def list_page(
    repository: ChatMemoryLog, *, owner: str | None, limit: int, cursor: str | None
) -> str | None:
    """Print one page of conversations with their owner and newest message.

    Args:
        repository: Where to list.
        owner: Only this owner's conversations.
        limit: Page size.
        cursor: Where the page starts (the previous page's next cursor).

    Returns:
        The next page's cursor, or ``None`` on the last page.
    """
    page = repository.list_conversations(owner=owner, limit=limit, cursor=cursor)
    table = Table(title="Conversations", title_justify="left")
    table.add_column("conversation id", style="bold")
    table.add_column("owner")
    table.add_column("latest message (UTC)", style="dim")
    table.add_column("latest", overflow="fold")
    for conversation_id in page.conversation_ids:
        recent = repository.find_recent(conversation_id, 1)
        latest = recent[-1].message if recent else None
        table.add_row(
            conversation_id,
            owner_of(conversation_id) or "",
            created_cell(latest) if latest else "",
            content_cell(latest, 60) if latest else "(system message only)",
        )
    if page.conversation_ids:
        console.print(table)
    else:
        console.print("No conversations." if cursor is None else "No more conversations.")
    if page.next_cursor is not None:
        console.print(f"More: --cursor {page.next_cursor!r}", style="dim", soft_wrap=True)
    return page.next_cursor


def _memory(
    repository: ChatMemoryLog, settings: ChatMemorySettings, max_messages: int | None
) -> MessageWindowChatMemory | TokenWindowChatMemory:
    if max_messages is not None:
        return MessageWindowChatMemory(repository, max_messages=max_messages)
    if settings.memory is MemoryKind.TOKEN_WINDOW:
        return settings.build_memory(repository)
    return MessageWindowChatMemory(repository, max_messages=settings.max_messages)


def _window_label(memory: MessageWindowChatMemory | TokenWindowChatMemory) -> str:
    if isinstance(memory, TokenWindowChatMemory):
        return f"token window, max_tokens={memory.max_tokens}"
    return f"message window, max_messages={memory.max_messages}"


def show_conversation(
    repository: ChatMemoryLog,
    conversation_id: str,
    *,
    settings: ChatMemorySettings,
    max_messages: int | None = None,
    history: bool = True,
) -> bool:
    """Print the memory view the model would get, the summary, then the full stored history.

    History rows carry their position and a ``✓`` when the message is in the memory view
    (``~`` when the window sends an edited copy: a tool call without its results dropped).
    When the repository keeps summaries, the conversation's summary is printed in a box with
    its version, the position of the last message it covers, and how many stored messages
    after that are not in it (those in the view, and those waiting to be folded in).

    Args:
        repository: Where the conversation lives.
        conversation_id: The conversation.
        settings: Window kind and size (``CHATMEM_MEMORY``, ``CHATMEM_MAX_MESSAGES``...).
        max_messages: Use a message window of this size instead of the settings.
        history: Also print the full history.

    Returns:
        Whether the conversation exists.
    """
    memory = _memory(repository, settings, max_messages)
    view = memory.get(conversation_id)
    first = repository.find_history(conversation_id, limit=1)
    if not view and not first:
        return False
    in_view: dict[str, Message] = {m.id: m for m in view}
    table = message_table(
        f"Memory view of {conversation_id!r} ({_window_label(memory)})", first="#"
    )
    for number, message in enumerate(view, start=1):
        table.add_row(str(number), type_cell(message), created_cell(message), content_cell(message))
    console.print(table)
    console.print(f"{len(view)} message(s) would be sent to the model.", style="dim")
    after_summary = _print_summary(repository, conversation_id, in_view)
    usage = UsageTotal()
    if not history:
        for _, message in _stored(repository, conversation_id):
            usage.add(message)
        _print_usage(usage)
        return True
    table = message_table(f"Full history of {conversation_id!r}", marks=True)
    total = calls = 0
    for position, message in _stored(repository, conversation_id):
        total += 1
        if isinstance(message, AssistantMessage):
            calls += len(message.tool_calls)
        sent = in_view.get(message.id)
        mark = "" if sent is None else ("✓" if sent == message else "~")
        if (
            not mark
            and after_summary is not None
            and message.id not in after_summary
            and not isinstance(message, SystemMessage)
        ):
            mark = "Σ"
        usage.add(message)
        table.add_row(
            position, mark, type_cell(message), created_cell(message), content_cell(message)
        )
    console.print(table)
    console.print(
        f"{total} stored message(s), {calls} tool call(s); {total - len(in_view)} not in the "
        "memory view (kept as history)."
        + (" Σ: folded into the summary." if after_summary is not None else ""),
        style="dim",
    )
    _print_usage(usage)
    return True


def _print_usage(usage: UsageTotal) -> None:
    line = usage.line()
    if line is not None:
        console.print(line, markup=False)


def _print_summary(
    repository: ChatMemoryLog, conversation_id: str, in_view: dict[str, Message]
) -> set[str] | None:
    """Print the summary and what it covers; return the ids stored after it (if there is one)."""
    if not isinstance(repository, SummaryStore):
        console.print("Summary: this repository does not keep summaries.", style="dim")
        return None
    summary = repository.find_summary(conversation_id)
    if summary is None:
        console.print("Summary: no summary (no turn has been folded into one yet).")
        return None
    console.print(summary_panel(summary, f"Summary of {conversation_id!r}"))
    after: set[str] = set()
    viewed = system = 0
    position = summary.covers
    while True:
        page = repository.find_history(conversation_id, after=position, limit=500)
        for stored in page:
            after.add(stored.message.id)
            if stored.message.id in in_view:
                viewed += 1
            elif isinstance(stored.message, SystemMessage):
                system += 1
        if len(page) < 500:
            break
        position = page[-1].position
    waiting = len(after) - viewed - system
    console.print(
        f"Summary version {summary.version} covers the history up to position "
        f"{summary.covers}; {len(after)} stored message(s) after it are not in it: {viewed} in "
        f"the memory view, {waiting} waiting to be folded in"
        + (f", {system} system" if system else "")
        + ". A summarizing memory sends it as one more message, after the system message.",
        style="dim",
        markup=False,
    )
    return after


def _stored(repository: ChatMemoryLog, conversation_id: str) -> Iterator[tuple[str, Message]]:
    # Positions are shown, so page with find_history directly rather than iter_history.
    after = None
    while True:
        page = repository.find_history(conversation_id, after=after, limit=500)
        yield from ((str(s.position), s.message) for s in page)
        if len(page) < 500:
            return
        after = page[-1].position

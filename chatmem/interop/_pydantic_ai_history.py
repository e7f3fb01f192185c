"""Loading and storing pydantic-ai message history through a chatmem memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic_ai import messages as pa

from chatmem.exceptions import ConfigurationError
from chatmem.interop._pydantic_ai_convert import from_pydantic_ai, to_pydantic_ai
from chatmem.memory import AsyncChatMemory, ChatMemory
from chatmem.messages import Message, SystemMessage
from chatmem.window import select_window

__all__ = [
    "aload_history",
    "asave_new_messages",
    "load_history",
    "save_new_messages",
    "window_processor",
]


def load_history(memory: ChatMemory, conversation_id: str) -> list[pa.ModelMessage]:
    """Return the memory's window as ``message_history`` for ``agent.run_sync``/``run``.

    The window keeps whole turns, so a tool call and its return are never split.

    Args:
        memory: A chatmem memory, such as ``MessageWindowChatMemory``.
        conversation_id: The conversation.
    """
    return to_pydantic_ai(memory.get(conversation_id))


def save_new_messages(
    memory: ChatMemory, conversation_id: str, messages: Sequence[pa.ModelMessage]
) -> None:
    """Store a run's ``result.new_messages()`` in the memory.

    Args:
        memory: The chatmem memory.
        conversation_id: The conversation.
        messages: The run's new messages.
    """
    memory.add(conversation_id, from_pydantic_ai(messages))


async def aload_history(memory: AsyncChatMemory, conversation_id: str) -> list[pa.ModelMessage]:
    """Async :func:`load_history`.

    Args:
        memory: An async chatmem memory, such as ``AsyncMessageWindowChatMemory``.
        conversation_id: The conversation.
    """
    return to_pydantic_ai(await memory.get(conversation_id))


async def asave_new_messages(
    memory: AsyncChatMemory, conversation_id: str, messages: Sequence[pa.ModelMessage]
) -> None:
    """Async :func:`save_new_messages`.

    Args:
        memory: The async chatmem memory.
        conversation_id: The conversation.
        messages: The run's new messages.
    """
    await memory.add(conversation_id, from_pydantic_ai(messages))


def window_processor(
    max_messages: int,
) -> Callable[[list[pa.ModelMessage]], list[pa.ModelMessage]]:
    """Return a pydantic-ai history processor that applies chatmem's turn-safe window.

    Every system prompt is kept; of the rest, the newest whole turns that fit in
    ``max_messages`` (counted as chatmem messages) are sent, and a tool call is never sent
    without its return. Messages kept whole are passed through as they are. Use it as
    ``Agent(..., capabilities=[ProcessHistory(window_processor(20))])``.

    Args:
        max_messages: Upper bound on the messages sent, system prompts included.

    Raises:
        ConfigurationError: If ``max_messages`` is less than 1.
    """
    if max_messages < 1:
        raise ConfigurationError(f"max_messages must be at least 1, got {max_messages!r}")

    def process(messages: list[pa.ModelMessage]) -> list[pa.ModelMessage]:
        pieces: list[tuple[int, Message]] = [
            (index, piece)
            for index, message in enumerate(messages)
            for piece in from_pydantic_ai([message])
        ]
        systems = [m for _, m in pieces if isinstance(m, SystemMessage)]
        chat = [m for _, m in pieces if not isinstance(m, SystemMessage)]
        budget = max(max_messages - len(systems), 1)
        kept = {m.id: m for m in [*systems, *select_window(chat, budget=budget, size=_one)]}
        out: list[pa.ModelMessage] = []
        for index, message in enumerate(messages):
            mine = [m for i, m in pieces if i == index]
            selected = [kept[m.id] for m in mine if m.id in kept]
            if selected == mine:
                out.append(message)  # whole and unchanged: the original object
            elif selected:
                out.extend(to_pydantic_ai(selected))
        return out

    return process


def _one(_: Message) -> int:
    return 1

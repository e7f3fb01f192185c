"""What the memory advisor sends and saves: pure functions shared by both twins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import InvalidConversationIdError, MissingConversationIdError
from chatmem.memory import CONVERSATION_ID
from chatmem.messages import Message, MessageType
from chatmem.model import ChatResponse
from chatmem.window import repair_tool_sequence

__all__ = ["conversation_id_of", "messages_to_save", "messages_to_send"]

_SYSTEM = MessageType.SYSTEM


def conversation_id_of(context: Mapping[str, Any], key: str = CONVERSATION_ID) -> str:
    """Return the validated conversation id of a request.

    Raises:
        MissingConversationIdError: If it is missing or invalid.
    """
    if key not in context or context[key] is None:
        raise MissingConversationIdError(
            f"no conversation id: pass one with .advisors({{CONVERSATION_ID: ...}}) "
            f"(context key {key!r}); chatmem has no default conversation"
        )
    try:
        return validate_conversation_id(context[key])
    except InvalidConversationIdError as exc:
        raise MissingConversationIdError(f"invalid conversation id: {exc}") from exc


def messages_to_send(
    memory: Sequence[Message], prompt: Sequence[Message]
) -> tuple[list[Message], list[Message]]:
    """Merge memory into a prompt.

    The prompt's system message wins: memory's stored system message is sent only when the
    prompt has none. Then memory's messages (repaired, so a stale unanswered tool call never
    reaches the provider), then the prompt's new messages.

    Returns:
        The messages to send, and the prompt's new (non-system) messages to save later.
    """
    prompt_system: list[Message] = []
    new: list[Message] = []
    for message in prompt:
        (prompt_system if message.type == _SYSTEM else new).append(message)
    stored_system: list[Message] = []
    chat: list[Message] = []
    for message in memory:
        if message.type == _SYSTEM:
            stored_system = [message]  # the last one wins
        else:
            chat.append(message)
    history = repair_tool_sequence(chat, allow_pending_tool_call=False)
    system = prompt_system or stored_system
    return [*system, *history, *new], new


def messages_to_save(new: Sequence[Message], response: ChatResponse) -> list[Message]:
    """Return the turn to store: the new messages, then every message the exchange produced.

    A response without an ``exchange`` (one not made by a chat client) contributes its
    answer message.
    """
    produced: Sequence[Message] = response.exchange
    if not produced and response.result is not None:
        produced = [response.result.message]
    return [*new, *produced]

"""One OpenAI Agents SDK session item as one chatmem message, and back, exactly."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.interop._common import ConversionError
from chatmem.interop.openai_responses import (
    METADATA_KEY,
    PROVIDER,
    from_responses,
    to_responses,
)
from chatmem.messages import (
    AssistantMessage,
    Message,
    ProviderItem,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "ITEM_KEY",
    "OPAQUE_PROVIDER",
    "as_item_dict",
    "call_names_in",
    "item_to_message",
    "message_id_of",
    "message_to_items",
]

ITEM_KEY = "item"
"""Key, inside a message's ``metadata["openai_responses"]``, of the item kept verbatim."""

OPAQUE_PROVIDER = "openai-agents"
"""The provider of the items that are no Responses API item (neither a ``type`` nor a
``role``): no converter sends them to a model."""

# The SDK's placeholder id for items a provider gave no id: shared by many items, so it
# cannot name a message.
_PLACEHOLDER_ID = "__fake_id__"
# Message ids are capped by the stores (255 characters in SQL); longer item ids get new ones.
_MAX_ID = 255
# Item types the Responses converter reads as an assistant turn.
_ASSISTANT_TYPES = frozenset({"reasoning", "function_call"})


def as_item_dict(item: object) -> dict[str, Any]:
    """Return an item as a dict (a copy of a mapping, or an ``openai`` SDK object's dump).

    Args:
        item: The item.

    Raises:
        ConversionError: It is neither.
    """
    dump = getattr(item, "model_dump", None)
    if callable(dump):  # an openai SDK object given where a dict is expected
        return dict(dump(mode="json", exclude_none=True))
    if isinstance(item, Mapping):
        return dict(item)
    raise ConversionError(f"a session item must be a mapping, not {type(item).__name__}")


def _kind(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type", "message" if "role" in item else None)
    return kind if isinstance(kind, str) else None


def message_id_of(item: Mapping[str, Any]) -> str | None:
    """The message id an item's own id gives, so that adding it again stores it once.

    Args:
        item: The item.

    Returns:
        The item's ``id``, or ``None`` when it has none (or the SDK's placeholder, or one
        too long for the stores): the message then gets a new id.
    """
    item_id = item.get("id")
    if isinstance(item_id, str) and item_id and item_id != _PLACEHOLDER_ID:
        return item_id if len(item_id) <= _MAX_ID else None
    return None


def call_names_in(items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Map the call ids of the ``function_call`` items among ``items`` to the tools' names.

    Args:
        items: Items as dicts.
    """
    return {
        str(item["call_id"]): str(item.get("name", ""))
        for item in items
        if item.get("type") == "function_call" and "call_id" in item
    }


def _tool_output(item: Mapping[str, Any], names: Mapping[str, str]) -> ToolResponseMessage:
    call_id = str(item.get("call_id", ""))
    output = item.get("output", "")
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    # A call stored neither in this batch nor recently leaves the name empty; the item's
    # verbatim copy keeps what the session returns exact either way.
    return ToolResponseMessage(
        responses=[ToolResponse(id=call_id, name=names.get(call_id, ""), response_data=text)]
    )


def _converted(item: dict[str, Any], kind: str | None, names: Mapping[str, str]) -> Message:
    if kind is None:
        # Not a Responses item: what a wrapping session stores (the SDK's EncryptedSession
        # stores envelopes). Kept, and sent to no model.
        return AssistantMessage(
            provider_items=[ProviderItem(provider=OPAQUE_PROVIDER, type="opaque", data=item)]
        )
    role = item.get("role")
    if kind == "function_call_output":
        return _tool_output(item, names)
    if (kind == "message" and role in ("user", "assistant")) or kind in _ASSISTANT_TYPES:
        (message,) = from_responses([item], lossy=True)
        return message
    # Developer and system messages, compaction and any other item: what chatmem has no
    # message for stays a provider item, sent back verbatim to the Responses API only.
    return AssistantMessage(provider_items=[ProviderItem(provider=PROVIDER, type=kind, data=item)])


def item_to_message(item: object, names: Mapping[str, str]) -> Message:
    """Convert one session item to the one chatmem message that stores it.

    User text is a user message, an assistant ``message`` item an assistant message, a
    ``reasoning`` item an assistant message holding one reasoning part, a ``function_call``
    item an assistant message holding one tool call, a ``function_call_output`` item a tool
    response message; any other item an assistant message holding it as a provider item
    (of provider ``openai``, or :data:`OPAQUE_PROVIDER` for a dict that is no Responses item).
    Where the message does not give the item back exactly, the item is kept verbatim in the
    message's ``metadata["openai_responses"]["item"]``.

    Args:
        item: The item (a dict, or an ``openai`` SDK object).
        names: Tool names by call id, for ``function_call_output`` items.

    Raises:
        ConversionError: The item is neither a mapping nor an ``openai`` SDK object.
    """
    data = as_item_dict(item)
    message = _converted(data, _kind(data), names)
    item_id = message_id_of(data)
    update: dict[str, Any] = {"id": item_id} if item_id is not None else {}
    if to_responses([message], lossy=True) != [data]:
        stash = message.metadata.get(METADATA_KEY)
        stash = dict(stash) if isinstance(stash, dict) else {}
        stash[ITEM_KEY] = data
        update["metadata"] = {**message.metadata, METADATA_KEY: stash}
    # Validated again: the copy's metadata must be JSON a store can write.
    return type(message).model_validate({**dict(message), **update}) if update else message


def message_to_items(message: Message) -> list[dict[str, Any]]:
    """Return the items a stored message stands for: the one it was made from, exactly.

    A message another chatmem writer stored (an assistant turn with reasoning, text and
    tool calls in one message) gives the items :func:`~chatmem.interop.openai_responses.
    to_responses` makes of it, leaving out what they cannot hold.

    Args:
        message: A user, assistant or tool response message.
    """
    stash = message.metadata.get(METADATA_KEY)
    if isinstance(stash, dict):
        kept = stash.get(ITEM_KEY)
        if isinstance(kept, dict):
            return [dict(kept)]
    if isinstance(message, UserMessage | AssistantMessage | ToolResponseMessage):
        return to_responses([message], lossy=True)
    return []

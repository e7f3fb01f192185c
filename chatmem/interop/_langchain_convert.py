"""The langchain converters behind :mod:`chatmem.interop.langchain` (see its docstring)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.interop._common import (
    ENVELOPE_KEY,
    ConversionError,
    envelope_of,
    field_defaults,
    holds_defaults,
    object_to_arguments,
    require,
    with_envelope,
)
from chatmem.messages import (
    AssistantMessage,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

require("langchain_core", "langchain")

from langchain_core import messages as lc  # noqa: E402

__all__ = ["STASH_KEY", "from_langchain", "to_langchain"]

STASH_KEY = "langchain"
"""Metadata key holding a LangChain message's JSON when chatmem's fields cannot hold it all."""

_KINDS = ("image", "audio", "video", "file")


# -- chatmem to LangChain ----------------------------------------------------------------------


def _media_block(media: Media) -> dict[str, Any]:
    kind = media.mime_type.split("/", 1)[0]
    block: dict[str, Any] = {"type": kind if kind in _KINDS else "file"}
    if media.url is not None:
        block["url"] = media.url
    else:
        assert media.data is not None
        block["base64"] = base64.b64encode(media.data).decode("ascii")
    block["mime_type"] = media.mime_type
    if media.name is not None:
        block["extras"] = {"filename": media.name}
    return block


def _content(text: str, media: Sequence[Media]) -> str | list[str | dict[str, Any]]:
    if not media:
        return text
    blocks: list[str | dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.extend(_media_block(m) for m in media)
    return blocks


def _tool_calls(message: AssistantMessage, envelope: dict[str, Any]) -> dict[str, Any]:
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for call in message.tool_calls:
        try:
            args = json.loads(call.arguments) if call.arguments else {}
        except ValueError:
            args = None
        if isinstance(args, dict):
            valid.append({"name": call.name, "args": args, "id": call.id, "type": "tool_call"})
        else:
            invalid.append(
                {"name": call.name, "args": call.arguments, "id": call.id, "error": None}
            )
        if not isinstance(args, dict) or object_to_arguments(args) != call.arguments:
            # Formatting or the order of valid and invalid calls would be lost: keep the calls.
            envelope["tool_calls"] = [c.model_dump() for c in message.tool_calls]
    return {"tool_calls": valid, "invalid_tool_calls": invalid}


def _core(message: Message) -> list[lc.BaseMessage]:
    """The LangChain form of a message's content, without chatmem's envelope."""
    envelope: dict[str, Any] = {}
    if isinstance(message, SystemMessage):
        return [lc.SystemMessage(message.text, id=message.id)]
    if isinstance(message, UserMessage):
        return [lc.HumanMessage(_content(message.text, message.media), id=message.id)]
    if isinstance(message, AssistantMessage):
        calls = _tool_calls(message, envelope)
        out = lc.AIMessage(_content(message.text, message.media), id=message.id, **calls)
        if envelope:
            out.additional_kwargs[ENVELOPE_KEY] = envelope
        return [out]
    responses = message.responses
    grouped = len(responses) > 1
    return [
        lc.ToolMessage(
            r.response_data,
            tool_call_id=r.id,
            name=r.name,
            id=f"{message.id}#{i}" if grouped else message.id,
            additional_kwargs={ENVELOPE_KEY: {"group": message.id}} if grouped else {},
        )
        for i, r in enumerate(responses)
    ]


def _plain_piece(message: Message) -> lc.BaseMessage | None:
    """The LangChain form of a text-only message without metadata, envelope included.

    What ``to_langchain`` builds for it in general, built at once (most messages are such).
    """
    if message.metadata:
        return None
    plain: type[lc.BaseMessage]
    if isinstance(message, UserMessage) and not message.media:
        plain = lc.HumanMessage
    elif isinstance(message, AssistantMessage) and not (message.media or message.tool_calls):
        plain = lc.AIMessage
    elif isinstance(message, SystemMessage):
        plain = lc.SystemMessage
    else:
        return None
    return plain(
        message.text, id=message.id, additional_kwargs={ENVELOPE_KEY: envelope_of(message)}
    )


def _from_stash(message: Message) -> lc.BaseMessage | None:
    stash = message.metadata.get(STASH_KEY)
    if not isinstance(stash, dict):
        return None
    try:
        (original,) = lc.messages_from_dict([stash])
        names = (
            {r.id: r.name for r in message.responses}
            if isinstance(message, ToolResponseMessage)
            else {}
        )
        (again,) = _pieces(original, names, lossy=True)
    except Exception:  # a stash that no longer parses is left in the metadata as it is
        return None
    if _same_content(again[0], message):
        return original
    return None


def _same_content(a: Message, b: Message) -> bool:
    fields = {"id", "created_at", "metadata"}
    return a.model_dump(exclude=fields) == b.model_dump(exclude=fields)


def to_langchain(messages: Sequence[Message], *, lossy: bool = False) -> list[lc.BaseMessage]:
    """Convert messages to LangChain messages.

    Args:
        messages: The messages, oldest first.
        lossy: Accepted for symmetry; every chatmem message converts exactly.

    Returns:
        One LangChain message per message, one ``ToolMessage`` per tool result.
    """
    out: list[lc.BaseMessage] = []
    for message in messages:
        plain = _plain_piece(message)
        if plain is not None:
            out.append(plain)
            continue
        restored = _from_stash(message)
        if restored is not None:
            converted = [restored.model_copy(deep=True, update={"id": restored.id or message.id})]
        else:
            converted = _core(message)
        envelope = envelope_of(message)
        metadata = {k: v for k, v in message.metadata.items() if k != STASH_KEY or restored is None}
        if metadata:
            envelope["metadata"] = metadata
        else:
            envelope.pop("metadata", None)
        for piece in converted:
            kwargs = dict(piece.additional_kwargs)
            piece.additional_kwargs = {
                **kwargs,
                ENVELOPE_KEY: {**kwargs.get(ENVELOPE_KEY, {}), **envelope},
            }
        out.extend(converted)
    return out


# -- LangChain to chatmem ----------------------------------------------------------------------


def _media_in(block: dict[str, Any]) -> Media | None:
    if block.get("type") == "image_url":  # the OpenAI-style block older code writes
        url = (
            block["image_url"]["url"]
            if isinstance(block["image_url"], dict)
            else block["image_url"]
        )
        if url.startswith("data:"):
            header, _, data = url[5:].partition(",")
            return Media(mime_type=header.split(";")[0], data=data)
        return Media(mime_type="image/*", url=url)
    if block.get("type") not in _KINDS or "file_id" in block:
        return None
    name = (block.get("extras") or {}).get("filename")
    mime = block.get("mime_type") or f"{block['type']}/*"
    if "base64" in block:
        return Media(mime_type=mime, data=block["base64"], name=name)
    if "url" in block:
        return Media(mime_type=mime, url=block["url"], name=name)
    return None


def _text_and_media(content: str | list[Any]) -> tuple[str, list[Media]]:
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    media: list[Media] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif (item := _media_in(block)) is not None:
            media.append(item)
    return "".join(texts), media


def _calls_in(message: lc.AIMessage, envelope: dict[str, Any]) -> list[ToolCall]:
    kept = envelope.get("tool_calls")
    ids = [c["id"] for c in message.tool_calls] + [c["id"] for c in message.invalid_tool_calls]
    if isinstance(kept, list) and sorted(str(c.get("id")) for c in kept) == sorted(map(str, ids)):
        return [ToolCall.model_validate(c) for c in kept]
    calls = [
        ToolCall(id=c["id"] or "", name=c["name"], arguments=object_to_arguments(c["args"]))
        for c in message.tool_calls
    ]
    calls.extend(
        ToolCall(id=c["id"] or "", name=c["name"] or "", arguments=c["args"] or "")
        for c in message.invalid_tool_calls
    )
    return calls


def _fields(
    message: lc.BaseMessage, envelope: dict[str, Any], names: dict[str, str]
) -> tuple[type[Message], dict[str, Any]]:
    text, media = _text_and_media(message.content)
    fields: dict[str, Any] = {"id": message.id} if message.id else {}
    role = message.role if isinstance(message, lc.ChatMessage) else None
    if isinstance(message, lc.SystemMessage) or role in ("system", "developer"):
        return SystemMessage, {**fields, "text": text}
    if isinstance(message, lc.HumanMessage) or role == "user":
        return UserMessage, {**fields, "text": text, "media": media}
    if isinstance(message, lc.AIMessage):
        calls = _calls_in(message, envelope)
        names.update((c.id, c.name) for c in calls)
        return AssistantMessage, {**fields, "text": text, "media": media, "tool_calls": calls}
    if role == "assistant":
        return AssistantMessage, {**fields, "text": text, "media": media}
    if isinstance(message, lc.ToolMessage):
        # A ToolMessage without a name is named after the call it answers.
        name = message.name or names.get(message.tool_call_id, "")
        response = ToolResponse(id=message.tool_call_id, name=name, response_data=text)
        return ToolResponseMessage, {**fields, "responses": [response]}
    raise ConversionError(f"chatmem has no message type for a LangChain {message.type!r} message")


# The LangChain classes whose messages the core mapping gives back whole when their content
# is text and every other field (additional kwargs aside) holds its default.
_PLAIN_DEFAULTS: dict[type[lc.BaseMessage], dict[str, Any]] = {
    kind: field_defaults(kind, skip=("content", "id", "type", "additional_kwargs"))
    for kind in (lc.HumanMessage, lc.AIMessage, lc.SystemMessage)
}


def _is_plain(message: lc.BaseMessage, kwargs: dict[str, Any]) -> bool:
    """Whether the core mapping gives ``message`` back as it is, without building it again.

    Text content and no field set but the id and chatmem's envelope: what LangChain apps
    add on every turn. Anything else is converted and compared (see ``_pieces``).
    """
    defaults = _PLAIN_DEFAULTS.get(type(message))
    return (
        defaults is not None
        and not kwargs
        and isinstance(message.content, str)
        and holds_defaults(message, defaults)
    )


def _pieces(
    message: lc.BaseMessage, names: dict[str, str], *, lossy: bool
) -> list[tuple[Message, str | None]]:
    kwargs = dict(message.additional_kwargs)
    envelope = kwargs.pop(ENVELOPE_KEY, None)
    envelope = envelope if isinstance(envelope, dict) else {}
    plain_already = _is_plain(message, kwargs)
    plain = message if plain_already else message.model_copy(update={"additional_kwargs": kwargs})
    kind, fields = _fields(plain, envelope, names)
    if "id" in envelope:
        fields = with_envelope(fields, envelope)
    converted = kind.model_validate(fields)
    group = envelope.get("group")
    if plain_already:
        return [(converted, group if isinstance(group, str) else None)]
    # What the core mapping gives back for this message; anything else of it is kept whole.
    regenerated = _core(converted)[0]
    regenerated.additional_kwargs.pop(ENVELOPE_KEY, None)
    if regenerated.model_dump(exclude={"id"}) != plain.model_dump(exclude={"id"}):
        try:
            stash = json.loads(json.dumps(lc.message_to_dict(plain)))
        except (TypeError, ValueError) as exc:
            if not lossy:
                raise ConversionError(
                    f"LangChain message {plain.id!r} holds fields that are not JSON; "
                    "pass lossy=True"
                ) from exc
        else:
            metadata = {**converted.metadata, STASH_KEY: stash}
            converted = converted.model_copy(update={"metadata": metadata})
            group = None  # a result changed in LangChain stands alone
    return [(converted, group if isinstance(group, str) else None)]


def from_langchain(
    messages: Iterable[lc.BaseMessage],
    *,
    lossy: bool = False,
    tool_names: Mapping[str, str] | None = None,
) -> list[Message]:
    """Convert LangChain messages to messages.

    Consecutive ``ToolMessage`` objects that came from one chatmem tool response message are
    joined again; any other ``ToolMessage`` becomes a tool response message of its own. A
    ``ToolMessage`` without a ``name`` is named after the ``AIMessage`` tool call it answers.

    Args:
        messages: LangChain messages, oldest first.
        lossy: Leave out fields that are not JSON instead of raising.
        tool_names: Tool names by call id, for results whose call came earlier than
            ``messages`` (as when a history adds a tool result alone).

    Raises:
        ConversionError: For a message type chatmem has no equivalent of, or (unless
            ``lossy``) fields that are not JSON.
    """
    out: list[Message] = []
    last_group: str | None = None
    names: dict[str, str] = dict(tool_names or {})
    for message in messages:
        for converted, group in _pieces(message, names, lossy=lossy):
            previous = out[-1] if out else None
            if (
                group is not None
                and group == last_group
                and isinstance(previous, ToolResponseMessage)
            ):
                responses = [*previous.responses, *converted.responses]  # type: ignore[union-attr]
                out[-1] = previous.model_copy(update={"responses": responses, "id": group})
            elif group is not None:
                out.append(converted.model_copy(update={"id": group}))
            else:
                out.append(converted)
            last_group = group
    return out

"""The langchain converters behind :mod:`chatmem.interop.langchain` (see its docstring)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.interop._common import (
    ENVELOPE_KEY,
    AssistantPart,
    ConversionError,
    assistant_parts,
    envelope_of,
    exact_fields,
    field_defaults,
    holds_defaults,
    object_to_arguments,
    placed,
    require,
    same_content,
    with_envelope,
)
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Media,
    Message,
    ProviderItem,
    ReasoningPart,
    SystemMessage,
    TokenUsage,
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

# The fields of an assistant message that chatmem's envelope keeps exactly when LangChain's
# blocks cannot say them all (a provider item without a provider in the message, an index
# out of the usual order, ...).
_EXACT_FIELDS = ("reasoning", "provider_items", "usage")


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
        out = _assistant_out(message, envelope)
        if envelope:
            out.additional_kwargs[ENVELOPE_KEY] = envelope
        return [out]
    if isinstance(message, EventMessage):
        raise ConversionError("an event is never sent to a model: leave it out")
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


def _assistant_out(message: AssistantMessage, envelope: dict[str, Any]) -> lc.AIMessage:
    """The AIMessage of an assistant message; what its blocks cannot say goes in ``envelope``."""
    out = _ai_message(message, envelope)
    again = message.model_copy(update=_assistant_fields(out, _calls_in(out, envelope)))
    envelope.update(exact_fields(message, again))
    return out


def _ai_message(message: AssistantMessage, envelope: dict[str, Any]) -> lc.AIMessage:
    calls = _tool_calls(message, envelope)
    fields: dict[str, Any] = {}
    if message.usage is not None:
        fields["usage_metadata"] = usage_out(message.usage)
    extras: list[ReasoningPart | ProviderItem] = [*message.reasoning, *message.provider_items]
    if not extras:
        content = _content(message.text, message.media)
        return lc.AIMessage(content, id=message.id, **calls, **fields)
    # LangChain's standard (v1) blocks, in the provider's order; the provider and model are
    # the message's, as LangChain's integrations read them to send reasoning back.
    metadata: dict[str, Any] = {"output_version": "v1"}
    providers = {p.provider for p in extras}
    models = {p.model for p in message.reasoning}
    if len(providers) == 1 and (provider := providers.pop()) is not None:
        metadata["model_provider"] = provider
    if len(models) == 1 and (model := models.pop()) is not None:
        metadata["model_name"] = model
    interleaved = any(p.index is not None for p in extras)
    blocks: list[str | dict[Any, Any]] = [
        block
        for part in assistant_parts(message)
        if (block := _block_out(part, metadata, interleaved)) is not None
    ]
    blocks.extend(_media_block(m) for m in message.media)
    return lc.AIMessage(blocks, id=message.id, response_metadata=metadata, **calls, **fields)


def _block_out(
    part: AssistantPart, metadata: dict[str, Any], interleaved: bool
) -> dict[str, Any] | None:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if isinstance(part, ToolCall):
        # Tool calls stand among the blocks only where their place matters.
        if not interleaved:
            return None
        try:
            args = json.loads(part.arguments) if part.arguments else {}
        except ValueError:
            args = None
        if isinstance(args, dict):
            return {"type": "tool_call", "id": part.id, "name": part.name, "args": args}
        return {
            "type": "invalid_tool_call",
            "id": part.id,
            "name": part.name,
            "args": part.arguments,
        }
    if isinstance(part, ProviderItem):
        return {"type": "non_standard", "value": dict(part.data)}
    if part.redacted:
        # As LangChain's Anthropic integration holds redacted thinking.
        return {
            "type": "non_standard",
            "value": {"type": "redacted_thinking", "data": part.signature},
        }
    block: dict[str, Any] = {"type": "reasoning", "reasoning": part.text}
    if part.id is not None:
        block["id"] = part.id
    extras: dict[str, Any] = dict(part.details)
    if part.signature is not None:
        extras[_signature_key(metadata.get("model_provider"))] = part.signature
    if extras:
        block["extras"] = extras
    return block


def _signature_key(provider: object) -> str:
    # LangChain's OpenAI integration sends back encrypted_content; the others, signature.
    return "encrypted_content" if provider == "openai" else "signature"


def usage_out(usage: TokenUsage) -> dict[str, Any]:
    """LangChain's ``usage_metadata`` for token usage.

    Args:
        usage: The token usage.
    """
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    cache = {"cache_read": usage.cache_read_tokens, "cache_creation": usage.cache_write_tokens}
    if cache := {k: v for k, v in cache.items() if v}:
        out["input_token_details"] = cache
    if usage.reasoning_tokens:
        out["output_token_details"] = {"reasoning": usage.reasoning_tokens}
    return out


def _plain_piece(message: Message) -> lc.BaseMessage | None:
    """The LangChain form of a text-only message without metadata, envelope included.

    What ``to_langchain`` builds for it in general, built at once (most messages are such).
    """
    if message.metadata:
        return None
    plain: type[lc.BaseMessage]
    if isinstance(message, UserMessage) and not message.media:
        plain = lc.HumanMessage
    elif isinstance(message, AssistantMessage) and not (
        message.media
        or message.tool_calls
        or message.reasoning
        or message.provider_items
        or message.usage is not None
    ):
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
    if same_content(again[0], message):
        return original
    return None


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
        if isinstance(message, EventMessage):
            continue  # an application's event is never sent to a model
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


def _assistant_fields(message: lc.AIMessage, calls: list[ToolCall]) -> dict[str, Any]:
    """The reasoning, provider items and usage an AIMessage's blocks and fields say."""
    metadata = message.response_metadata
    provider = metadata.get("model_provider")
    provider = provider if isinstance(provider, str) else None
    model = metadata.get("model_name")
    model = model if isinstance(model, str) else None
    pieces: list[AssistantPart] = []
    kwargs = message.additional_kwargs
    # Older forms, kept outside the content: OpenAI's reasoning item, and the reasoning text
    # of the integrations for DeepSeek, Groq, xAI and other OpenAI-compatible servers.
    if isinstance(kwargs.get("reasoning"), dict):
        pieces.append(_openai_reasoning_in(kwargs["reasoning"], provider or "openai", model))
    if isinstance(kwargs.get("reasoning_content"), str):
        pieces.append(
            ReasoningPart(text=kwargs["reasoning_content"], provider=provider, model=model)
        )
    by_id = {c.id: c for c in calls}
    placed_calls: set[str] = set()
    content = message.content if isinstance(message.content, list) else [message.content]
    for block in content:
        if isinstance(block, str):
            pieces.append(block)
        elif isinstance(block, dict):
            piece = _block_in(block, provider, model, by_id)
            if isinstance(piece, ToolCall):
                if piece.id in placed_calls:
                    continue
                placed_calls.add(piece.id)
            if piece is not None:
                pieces.append(piece)
    pieces.extend(c for c in calls if c.id not in placed_calls)
    reasoning, items = placed(pieces)
    usage = message.usage_metadata
    return {
        "reasoning": reasoning,
        "provider_items": items,
        "usage": usage_in(dict(usage)) if usage is not None else None,
    }


def _block_in(
    block: dict[str, Any], provider: str | None, model: str | None, calls: dict[str, ToolCall]
) -> AssistantPart | None:
    """The part of one content block of an AIMessage, or None for a media block or another."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("tool_call", "invalid_tool_call", "tool_use", "function_call"):
        return calls.get(str(block.get("call_id", block.get("id"))))
    if kind == "reasoning":
        if "summary" in block:  # OpenAI's Responses API item, as LangChain's integration keeps it
            return _openai_reasoning_in(block, provider or "openai", model)
        extras = dict(block.get("extras") or {})
        signature = extras.pop(_signature_key(provider), None)
        return _reasoning(
            text=block.get("reasoning", ""),
            signature=signature,
            id=block.get("id"),
            provider=provider,
            model=model,
            details=extras,
        )
    if kind == "thinking":  # Anthropic's block, as LangChain's integration keeps it
        extras = {k: v for k, v in block.items() if k not in ("type", "thinking", "signature")}
        return _reasoning(
            text=block.get("thinking", ""),
            signature=block.get("signature"),
            provider=provider or "anthropic",
            model=model,
            details=extras,
        )
    value = block.get("value") if kind == "non_standard" else block
    if isinstance(value, dict) and value.get("type") == "redacted_thinking":
        return _reasoning(
            signature=value.get("data"),
            redacted=True,
            provider=provider or "anthropic",
            model=model,
        )
    if kind == "non_standard" and isinstance(value, dict) and provider is not None:
        try:
            return ProviderItem(provider=provider, type=str(value.get("type", "")), data=value)
        except ValueError:
            return None
    return None


def _reasoning(**fields: Any) -> ReasoningPart | None:
    try:
        return ReasoningPart(**fields)
    except ValueError:  # a field that is not what chatmem holds: the stash keeps the original
        return None


def _openai_reasoning_in(item: dict[str, Any], provider: str, model: str | None) -> ReasoningPart:
    summary = item.get("summary") or []
    texts = [str(s.get("text", "")) for s in summary if isinstance(s, dict)]
    known = ("type", "id", "encrypted_content", "index")
    details = {k: v for k, v in item.items() if k not in known}
    if len(summary) < 2:
        details.pop("summary", None)  # one summary part is the text
    part = _reasoning(
        text="\n\n".join(texts),
        signature=item.get("encrypted_content"),
        id=item.get("id"),
        provider=provider,
        model=model,
        details=details,
    )
    return part if part is not None else ReasoningPart(provider=provider, model=model)


def usage_in(usage: dict[str, Any]) -> TokenUsage | None:
    """Token usage for LangChain's ``usage_metadata``; None if the counts are not counts.

    Args:
        usage: The ``usage_metadata`` dict.
    """
    inputs = usage.get("input_token_details") or {}
    outputs = usage.get("output_token_details") or {}
    try:
        return TokenUsage(
            input_tokens=usage.get("input_tokens", 0),
            output_tokens=usage.get("output_tokens", 0),
            reasoning_tokens=outputs.get("reasoning", 0),
            cache_read_tokens=inputs.get("cache_read", 0),
            cache_write_tokens=inputs.get("cache_creation", 0),
        )
    except ValueError:
        return None


def _still_holds(fields: dict[str, Any], message: lc.AIMessage) -> bool:
    """Whether the exact fields the envelope kept still give the message's blocks.

    A message changed in LangChain after chatmem wrote it is read from its blocks.
    """
    try:
        exact = AssistantMessage.model_validate(fields)
    except ValueError:
        return False
    again = _ai_message(exact, {})
    return again.content == message.content and again.usage_metadata == message.usage_metadata


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
        fields = {**fields, "text": text, "media": media, "tool_calls": calls}
        extras = _assistant_fields(message, calls)
        exact = {name: envelope[name] for name in _EXACT_FIELDS if name in envelope}
        if exact and _still_holds({**fields, **extras, **exact}, message):
            extras.update(exact)
        return AssistantMessage, {**fields, **extras}
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

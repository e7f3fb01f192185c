"""The pydantic ai converters behind :mod:`chatmem.interop.pydantic_ai` (see its docstring)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    ReasoningPart,
    SystemMessage,
    TokenUsage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import messages as pa  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

__all__ = ["STASH_KEY", "from_pydantic_ai", "to_pydantic_ai"]

STASH_KEY = "pydantic_ai"
"""Metadata key holding a pydantic-ai message's JSON when chatmem's fields cannot hold it."""

# The ThinkingPart ids pydantic-ai gives Claude's redacted thinking (its signature holds the
# data); chatmem writes the first.
_REDACTED_IDS = ("redacted_thinking", "redacted_content")

# The fields of an assistant message that the envelope of a ModelResponse keeps exactly when
# pydantic-ai's parts cannot say them all (a provider item, an index out of the usual order...).
_EXACT_FIELDS = ("reasoning", "provider_items", "usage")

# -- chatmem to pydantic-ai --------------------------------------------------------------------


def _media_out(
    media: Media,
) -> pa.ImageUrl | pa.AudioUrl | pa.VideoUrl | pa.DocumentUrl | pa.BinaryContent:
    if media.url is None:
        assert media.data is not None
        return pa.BinaryContent(media.data, media_type=media.mime_type)
    kind = media.mime_type.split("/", 1)[0]
    if kind == "image":
        return pa.ImageUrl(media.url, media_type=media.mime_type)
    if kind == "audio":
        return pa.AudioUrl(media.url, media_type=media.mime_type)
    if kind == "video":
        return pa.VideoUrl(media.url, media_type=media.mime_type)
    return pa.DocumentUrl(media.url, media_type=media.mime_type)


def _core(message: Message, *, lossy: bool) -> pa.ModelMessage:
    """The pydantic-ai form of a message's content, without chatmem's envelope."""
    at = message.created_at
    if isinstance(message, SystemMessage):
        return pa.ModelRequest([pa.SystemPromptPart(message.text, timestamp=at)], timestamp=at)
    if isinstance(message, UserMessage):
        content: str | list[pa.UserContent] = message.text
        if message.media:
            content = [message.text] if message.text else []
            content.extend(_media_out(m) for m in message.media)
        return pa.ModelRequest([pa.UserPromptPart(content, timestamp=at)], timestamp=at)
    if isinstance(message, AssistantMessage):
        if message.media and not lossy:
            raise ConversionError(
                "pydantic-ai model responses cannot hold media from chatmem; pass lossy=True"
            )
        parts = [p for part in assistant_parts(message) if (p := _part_out(part)) is not None]
        if not parts:
            parts.append(pa.TextPart(message.text))
        models = {p.model for p in message.reasoning}
        return pa.ModelResponse(
            parts,
            timestamp=at,
            usage=_usage_out(message.usage),
            model_name=models.pop() if len(models) == 1 else None,
        )
    if isinstance(message, EventMessage):
        raise ConversionError("an event is never sent to a model: leave it out")
    returns = [
        pa.ToolReturnPart(r.name, r.response_data, tool_call_id=r.id, timestamp=at)
        for r in message.responses
    ]
    return pa.ModelRequest(returns, timestamp=at)


def _part_out(part: AssistantPart) -> pa.ModelResponsePart | None:
    """The pydantic-ai part of one part of an assistant message; None for a provider item."""
    if isinstance(part, str):
        return pa.TextPart(part)
    if isinstance(part, ToolCall):
        return pa.ToolCallPart(part.name, part.arguments, tool_call_id=part.id)
    if isinstance(part, ReasoningPart):
        return pa.ThinkingPart(
            part.text,
            id=_REDACTED_IDS[0] if part.redacted else part.id,
            signature=part.signature,
            provider_name=part.provider,
            provider_details=dict(part.details) or None,
        )
    return None  # pydantic-ai has no part for it: the envelope keeps it


def _usage_out(usage: TokenUsage | None) -> RequestUsage:
    if usage is None:
        return RequestUsage()
    return RequestUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        output_reasoning_tokens=usage.reasoning_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def _exact_extras(message: Message, converted: pa.ModelMessage) -> dict[str, Any]:
    """What of an assistant message's reasoning, items and usage its parts cannot say."""
    if not isinstance(message, AssistantMessage) or not isinstance(converted, pa.ModelResponse):
        return {}
    return exact_fields(message, _response_in(converted, {}))


def _from_stash(message: Message) -> pa.ModelMessage | None:
    stash = message.metadata.get(STASH_KEY)
    if not isinstance(stash, dict):
        return None
    try:
        (original,) = pa.ModelMessagesTypeAdapter.validate_python([stash])
        again = _pieces(original, {}, lossy=True)
    except Exception:  # a stash that no longer parses stays in the metadata as it is
        return None
    if len(again) == 1 and same_content(again[0], message):
        return original
    return None


def to_pydantic_ai(messages: Sequence[Message], *, lossy: bool = False) -> list[pa.ModelMessage]:
    """Convert messages to pydantic-ai messages, one ``ModelMessage`` each.

    Args:
        messages: The messages, oldest first.
        lossy: Leave out media on assistant messages instead of raising.

    Raises:
        ConversionError: If an assistant message has media (unless ``lossy``).
    """
    out: list[pa.ModelMessage] = []
    for message in messages:
        if isinstance(message, EventMessage):
            continue  # an application's event is never sent to a model
        restored = _from_stash(message)
        converted = restored if restored is not None else _core(message, lossy=lossy)
        envelope = envelope_of(message)
        metadata = {k: v for k, v in message.metadata.items() if k != STASH_KEY or restored is None}
        envelope.pop("metadata", None)
        if metadata:
            envelope["metadata"] = metadata
        names = [m.name for m in getattr(message, "media", [])]
        if any(name is not None for name in names):
            envelope["media_names"] = names
        envelope.update(_exact_extras(message, converted))
        converted.metadata = {**(converted.metadata or {}), ENVELOPE_KEY: envelope}
        out.append(converted)
    return out


# -- pydantic-ai to chatmem --------------------------------------------------------------------


def _user_in(part: pa.UserPromptPart, envelope: dict[str, Any]) -> dict[str, Any]:
    if isinstance(part.content, str):
        return {"text": part.content}
    texts: list[str] = []
    media: list[Media] = []
    for item in part.content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, pa.FileUrl):
            media.append(Media(mime_type=item.media_type, url=item.url))
        elif isinstance(item, pa.BinaryContent):
            media.append(Media(mime_type=item.media_type, data=item.data))
    names = envelope.get("media_names")
    if isinstance(names, list) and len(names) == len(media):
        media = [m.model_copy(update={"name": n}) for m, n in zip(media, names, strict=True)]
    return {"text": "".join(texts), "media": media}


def _return_text(part: pa.ToolReturnPart | pa.RetryPromptPart) -> str:
    if isinstance(part, pa.RetryPromptPart):
        return part.model_response()
    return part.content if isinstance(part.content, str) else part.model_response_str()


def _request_in(
    message: pa.ModelRequest, names: dict[str, str], envelope: dict[str, Any]
) -> list[tuple[Message, list[int]]]:
    """The messages of a request, each with the indices of the parts it came from."""
    out: list[tuple[Message, list[int]]] = []
    for index, part in enumerate(message.parts):
        previous = out[-1][0] if out else None
        if isinstance(part, pa.SystemPromptPart):
            out.append((SystemMessage(part.content, created_at=part.timestamp), [index]))
        elif isinstance(part, pa.UserPromptPart):
            user = UserMessage(created_at=part.timestamp, **_user_in(part, envelope))
            out.append((user, [index]))
        elif isinstance(part, pa.RetryFeedbackPart) or (
            isinstance(part, pa.RetryPromptPart) and part.tool_name is None
        ):
            # Feedback that answers no tool call reaches the model as a user message.
            text = part.model_response()
            out.append((UserMessage(text, created_at=part.timestamp), [index]))
        elif isinstance(part, pa.ToolReturnPart | pa.RetryPromptPart):
            name = part.tool_name or names.get(part.tool_call_id, "")
            response = ToolResponse(
                id=part.tool_call_id, name=name, response_data=_return_text(part)
            )
            if isinstance(previous, ToolResponseMessage):
                merged = previous.model_copy(update={"responses": [*previous.responses, response]})
                out[-1] = (merged, [*out[-1][1], index])
            else:
                tool = ToolResponseMessage(responses=[response], created_at=part.timestamp)
                out.append((tool, [index]))
        # Other parts (capability and instruction parts) travel in the stash.
    return out


def _thinking_in(part: pa.ThinkingPart, model: str | None) -> ReasoningPart:
    redacted = part.id in _REDACTED_IDS
    fields: dict[str, Any] = {
        "text": part.content,
        "signature": part.signature,
        "redacted": redacted,
        "id": None if redacted else part.id,
        "provider": part.provider_name,
        "model": model,
    }
    try:
        return ReasoningPart(**fields, details=part.provider_details or {})
    except ValueError:  # details that are not JSON: the stash keeps the original
        return ReasoningPart(**fields)


def _usage_in(usage: RequestUsage) -> TokenUsage | None:
    if usage == RequestUsage():
        return None
    return TokenUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.output_reasoning_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def _response_in(message: pa.ModelResponse, names: dict[str, str]) -> AssistantMessage:
    pieces: list[AssistantPart] = []
    calls = []
    texts = []
    for part in message.parts:
        if isinstance(part, pa.TextPart):
            texts.append(part.content)
            pieces.append(part.content)
        elif isinstance(part, pa.ToolCallPart):
            arguments = part.args if isinstance(part.args, str) else object_to_arguments(part.args)
            call = ToolCall(id=part.tool_call_id, name=part.tool_name, arguments=arguments)
            calls.append(call)
            pieces.append(call)
            names[part.tool_call_id] = part.tool_name
        elif isinstance(part, pa.ThinkingPart):
            pieces.append(_thinking_in(part, message.model_name))
        # Other parts (built-in tools, files, compaction) travel in the stash.
    reasoning, _ = placed(pieces)
    return AssistantMessage(
        "".join(texts),
        tool_calls=calls,
        reasoning=reasoning,
        usage=_usage_in(message.usage),
        created_at=message.timestamp,
    )


def _with_exact_extras(
    piece: AssistantMessage, message: pa.ModelResponse, envelope: dict[str, Any]
) -> AssistantMessage:
    """``piece`` with the envelope's exact reasoning, items and usage, if they still hold.

    They are taken only if the message's parts are still what they give: a message changed
    in pydantic-ai after chatmem wrote it is read from its parts.
    """
    kept = {name: envelope[name] for name in _EXACT_FIELDS if name in envelope}
    if not kept:
        return piece
    try:
        exact = AssistantMessage.model_validate({**piece.model_dump(), **kept})
    except ValueError:
        return piece
    regenerated = _core(exact, lossy=True)
    assert isinstance(regenerated, pa.ModelResponse)
    if regenerated.parts != message.parts or _usage_in(regenerated.usage) != _usage_in(
        message.usage
    ):
        return piece
    return exact


def _dump(message: pa.ModelMessage) -> Any:
    (dump,) = pa.ModelMessagesTypeAdapter.dump_python([message], mode="json")
    metadata = dict(dump.get("metadata") or {})
    metadata.pop(ENVELOPE_KEY, None)
    dump["metadata"] = metadata or None
    return dump


# What the core mapping leaves at its default in the messages it builds, by class.
_CORE_DEFAULTS = {
    kind: field_defaults(kind, skip=("parts", "timestamp", "metadata", "usage", "model_name"))
    for kind in (pa.ModelRequest, pa.ModelResponse)
}


def _kept_anyway(message: pa.ModelMessage) -> bool:
    """Whether ``message`` sets a field the core mapping never does (run id, model, usage...).

    Then its JSON is kept beside chatmem's fields without building the core mapping's
    version to compare (what an agent run gives always sets some). Saying so wrongly would
    only keep a copy that reading back does not need.
    """
    defaults = _CORE_DEFAULTS.get(type(message))
    return defaults is None or not holds_defaults(message, defaults)


def _pieces(message: pa.ModelMessage, names: dict[str, str], *, lossy: bool) -> list[Message]:
    raw = (message.metadata or {}).get(ENVELOPE_KEY)
    envelope: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if isinstance(message, pa.ModelRequest):
        converted = _request_in(message, names, envelope)
    else:
        response = _with_exact_extras(_response_in(message, names), message, envelope)
        converted = [(response, list(range(len(message.parts))))]
    if len(converted) == 1 and "id" in envelope:
        piece, indices = converted[0]
        fields = with_envelope(piece.model_dump(exclude={"id", "created_at"}), envelope)
        converted = [(type(piece).model_validate(fields), indices)]
    whole = _dump(message)
    kept_anyway = _kept_anyway(message)
    out = []
    for piece, indices in converted:
        # This message's share of the original, kept whole when the core mapping cannot
        # give it back.
        own = {**whole, "parts": [whole["parts"][i] for i in indices]}
        if kept_anyway or _dump(_core(piece, lossy=True)) != own:
            piece = piece.model_copy(update={"metadata": {**piece.metadata, STASH_KEY: own}})
        out.append(piece)
    return out


def from_pydantic_ai(messages: Iterable[pa.ModelMessage], *, lossy: bool = False) -> list[Message]:
    """Convert pydantic-ai messages to messages.

    Args:
        messages: ``ModelRequest`` and ``ModelResponse`` objects, oldest first (as
            ``result.new_messages()`` or ``result.all_messages()`` give them).
        lossy: Accepted for symmetry; whatever chatmem's fields cannot hold is kept in the
            metadata.

    Raises:
        ConversionError: If an item is not a pydantic-ai message.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, pa.ModelRequest | pa.ModelResponse):
            raise ConversionError(f"not a pydantic-ai message: {type(message).__name__}")
        out.extend(_pieces(message, names, lossy=lossy))
    return out

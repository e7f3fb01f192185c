"""The llama index converters behind :mod:`chatmem.interop.llama_index` (see its docstring)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.interop._common import (
    ENVELOPE_KEY,
    AssistantPart,
    ConversionError,
    arguments_to_object,
    assistant_parts,
    object_to_arguments,
    placed,
    require,
    same_content,
)
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Media,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

require("llama_index.core", "llama-index")

from llama_index.core.base.llms import types as li  # noqa: E402

__all__ = ["STASH_KEY", "from_llama_index", "to_llama_index"]

STASH_KEY = "llama_index"
"""Metadata key holding a LlamaIndex message's JSON when chatmem's fields cannot hold it."""

_DEFAULT_TITLE = "input_document"
_AUDIO = {"audio/mpeg": "mp3", "audio/wav": "wav"}
_AUDIO_MIME = {fmt: mime for mime, fmt in _AUDIO.items()}

# The key of a ThinkingBlock's additional information that LlamaIndex's integrations send
# back to the provider (Anthropic's signature); chatmem's other fields of a reasoning part go
# under ENVELOPE_KEY beside it, and its details stand as the other keys.
_SIGNATURE = "signature"


def _fail(lossy: bool, reason: str) -> None:
    if not lossy:
        raise ConversionError(f"LlamaIndex chat messages cannot hold {reason}; pass lossy=True")


# -- chatmem to LlamaIndex ---------------------------------------------------------------------


def _audio_format(mime: str) -> str:
    return _AUDIO.get(mime, mime.split("/", 1)[1])


def _audio_mime(fmt: str | None) -> str:
    return _AUDIO_MIME.get(fmt or "", f"audio/{fmt}")


def _encoded(media: Media) -> bytes | None:
    # LlamaIndex takes bytes that are valid base64 as already encoded: always encode.
    return base64.b64encode(media.data) if media.data is not None else None


def _media_block(media: Media, lossy: bool) -> li.ContentBlock:
    kind = media.mime_type.split("/", 1)[0]
    if kind in ("image", "audio", "video") and media.name is not None:
        _fail(lossy, f"the name of {kind} media ({media.name!r})")
    if kind == "image":
        return li.ImageBlock(image=_encoded(media), url=media.url, image_mimetype=media.mime_type)
    if kind == "audio":
        if _audio_mime(_audio_format(media.mime_type)) != media.mime_type:
            _fail(lossy, f"audio typed {media.mime_type}")
        return li.AudioBlock(
            audio=_encoded(media), url=media.url, format=_audio_format(media.mime_type)
        )
    if kind == "video":
        return li.VideoBlock(video=_encoded(media), url=media.url, video_mimetype=media.mime_type)
    if media.name == _DEFAULT_TITLE:
        _fail(lossy, f"a document named {_DEFAULT_TITLE!r} (LlamaIndex's default title)")
    return li.DocumentBlock(
        data=_encoded(media),
        url=media.url,
        document_mimetype=media.mime_type,
        title=media.name or _DEFAULT_TITLE,
    )


def _blocks(text: str, media: Sequence[Media], lossy: bool) -> list[li.ContentBlock]:
    blocks: list[li.ContentBlock] = [li.TextBlock(text=text)] if text or not media else []
    blocks.extend(_media_block(m, lossy) for m in media)
    return blocks


def _tool_call_block(call: ToolCall) -> li.ToolCallBlock:
    try:
        kwargs: dict[str, Any] | str = arguments_to_object(call.arguments, lossy=False, where="")
    except ConversionError:
        kwargs = call.arguments  # LlamaIndex holds the text as it is
    return li.ToolCallBlock(tool_call_id=call.id, tool_name=call.name, tool_kwargs=kwargs)


def _assistant_blocks(message: AssistantMessage) -> list[li.ContentBlock]:
    """The text, thinking and tool call blocks of an assistant message, in provider order."""
    indexed = any(p.index is not None for p in message.reasoning)
    blocks: list[li.ContentBlock] = []
    for part in assistant_parts(message):
        if isinstance(part, str):
            blocks.append(li.TextBlock(text=part))
        elif isinstance(part, ToolCall):
            blocks.append(_tool_call_block(part))
        elif isinstance(part, ReasoningPart):
            blocks.append(_thinking_block(part, indexed))
    return blocks


def _thinking_block(part: ReasoningPart, indexed: bool) -> li.ThinkingBlock:
    own: dict[str, Any] = part.model_dump(
        mode="json", include={"id", "provider", "model", "redacted"}, exclude_defaults=True
    )
    if indexed:
        own["index"] = part.index  # None too: the place alone would give one
    information: dict[str, Any] = dict(part.details)
    if _SIGNATURE in information or ENVELOPE_KEY in information:
        own["details"] = information
        information = {}
    if part.signature is not None:
        information[_SIGNATURE] = part.signature
    if own:
        information[ENVELOPE_KEY] = own
    return li.ThinkingBlock(content=part.text, additional_information=information)


def _core(message: Message, names: dict[str, str], lossy: bool) -> list[li.ChatMessage]:
    """The LlamaIndex form of a message's content."""
    if isinstance(message, SystemMessage):
        return [
            li.ChatMessage(role=li.MessageRole.SYSTEM, blocks=[li.TextBlock(text=message.text)])
        ]
    if isinstance(message, UserMessage):
        blocks = _blocks(message.text, message.media, lossy)
        return [li.ChatMessage(role=li.MessageRole.USER, blocks=blocks)]
    if isinstance(message, AssistantMessage):
        if message.provider_items:
            _fail(lossy, f"provider items (message {message.id})")
        if message.usage is not None:
            _fail(lossy, f"token usage (message {message.id})")
        if message.reasoning:
            blocks = _assistant_blocks(message)
            blocks.extend(_media_block(m, lossy) for m in message.media)
        else:
            blocks = (
                _blocks(message.text, message.media, lossy) if message.text or message.media else []
            )
            blocks.extend(_tool_call_block(c) for c in message.tool_calls)
        names.update((c.id, c.name) for c in message.tool_calls)
        if not blocks:
            blocks = [li.TextBlock(text="")]
        return [li.ChatMessage(role=li.MessageRole.ASSISTANT, blocks=blocks)]
    if isinstance(message, EventMessage):
        raise ConversionError("an event is never sent to a model: leave it out")
    for r in message.responses:
        if names.get(r.id) != r.name:
            _fail(lossy, f"the name {r.name!r} of tool result {r.id!r} without its call")
    return [
        li.ChatMessage(
            role=li.MessageRole.TOOL,
            blocks=[li.TextBlock(text=r.response_data)],
            additional_kwargs={"tool_call_id": r.id},
        )
        for r in message.responses
    ]


def _from_stash(message: Message) -> li.ChatMessage | None:
    stash = message.metadata.get(STASH_KEY)
    if not isinstance(stash, dict):
        return None
    try:
        original = li.ChatMessage.model_validate(stash)
        names = (
            {r.id: r.name for r in message.responses}
            if isinstance(message, ToolResponseMessage)
            else {}
        )
        (again,) = [m for m, _ in _pieces(original, names, lossy=True)]
    except Exception:  # a stash that no longer parses stays in the metadata as it is
        return None
    if same_content(again, message):
        return original
    return None


def to_llama_index(messages: Sequence[Message], *, lossy: bool = False) -> list[li.ChatMessage]:
    """Convert messages to LlamaIndex chat messages.

    Args:
        messages: The messages, oldest first.
        lossy: Leave out what LlamaIndex cannot hold (see the module) instead of raising.

    Raises:
        ConversionError: If a message holds something LlamaIndex cannot.
    """
    out: list[li.ChatMessage] = []
    names: dict[str, str] = {}
    previous: Message | None = None
    for message in messages:
        if isinstance(message, EventMessage):
            continue  # an application's event is never sent to a model
        restored = _from_stash(message)
        if any(key != STASH_KEY for key in message.metadata):
            _fail(lossy, f"message metadata (message {message.id})")
        if isinstance(message, ToolResponseMessage) and isinstance(previous, ToolResponseMessage):
            _fail(lossy, "two tool response messages in a row")
        if restored is not None:
            out.append(restored)
            if isinstance(message, AssistantMessage):
                names.update((c.id, c.name) for c in message.tool_calls)
        else:
            out.extend(_core(message, names, lossy))
        previous = message
    return out


# -- LlamaIndex to chatmem ---------------------------------------------------------------------


def _decoded(data: object) -> bytes | None:
    if data is None:
        return None
    raw = data if isinstance(data, bytes) else getattr(data, "read")()  # noqa: B009
    return base64.b64decode(raw)


def _media_in(block: li.ContentBlock) -> Media | None:
    if isinstance(block, li.ImageBlock):
        url = str(block.url) if block.url else None
        return Media(
            mime_type=block.image_mimetype or "image/*", data=_decoded(block.image), url=url
        )
    if isinstance(block, li.AudioBlock):
        url = str(block.url) if block.url else None
        return Media(mime_type=_audio_mime(block.format), data=_decoded(block.audio), url=url)
    if isinstance(block, li.VideoBlock):
        url = str(block.url) if block.url else None
        return Media(
            mime_type=block.video_mimetype or "video/*", data=_decoded(block.video), url=url
        )
    if isinstance(block, li.DocumentBlock):
        url = str(block.url) if block.url else None
        name = None if block.title == _DEFAULT_TITLE else block.title
        mime = block.document_mimetype or "application/octet-stream"
        return Media(mime_type=mime, data=_decoded(block.data), url=url, name=name)
    return None


def _fields(message: li.ChatMessage, names: dict[str, str]) -> tuple[type[Message], dict[str, Any]]:
    texts = [b.text for b in message.blocks if isinstance(b, li.TextBlock)]
    media = [m for b in message.blocks if (m := _media_in(b)) is not None]
    text = "".join(texts)
    role = message.role
    if role in (li.MessageRole.SYSTEM, li.MessageRole.DEVELOPER):
        return SystemMessage, {"text": text}
    if role == li.MessageRole.USER:
        return UserMessage, {"text": text, "media": media}
    if role in (li.MessageRole.ASSISTANT, li.MessageRole.MODEL, li.MessageRole.CHATBOT):
        calls = []
        for block in message.blocks:
            if isinstance(block, li.ToolCallBlock):
                kwargs = block.tool_kwargs
                arguments = kwargs if isinstance(kwargs, str) else object_to_arguments(kwargs)
                calls.append(
                    ToolCall(id=block.tool_call_id or "", name=block.tool_name, arguments=arguments)
                )
        names.update((c.id, c.name) for c in calls)
        reasoning = _reasoning_in(message.blocks, calls)
        return AssistantMessage, {
            "text": text,
            "media": media,
            "tool_calls": calls,
            "reasoning": reasoning,
        }
    if role in (li.MessageRole.TOOL, li.MessageRole.FUNCTION):
        call_id = str(message.additional_kwargs.get("tool_call_id", ""))
        name = str(message.additional_kwargs.get("name") or names.get(call_id, ""))
        response = ToolResponse(id=call_id, name=name, response_data=text)
        return ToolResponseMessage, {"responses": [response]}
    raise ConversionError(f"chatmem has no message type for LlamaIndex role {role!r}")


def _reasoning_in(blocks: list[li.ContentBlock], calls: list[ToolCall]) -> list[ReasoningPart]:
    pieces: list[AssistantPart] = []
    own_index: dict[int, object] = {}
    remaining = iter(calls)
    for block in blocks:
        if isinstance(block, li.TextBlock):
            pieces.append(block.text)
        elif isinstance(block, li.ToolCallBlock):
            pieces.append(next(remaining))
        elif isinstance(block, li.ThinkingBlock):
            part, index = _thinking_in(block)
            if index is not _NO_INDEX:
                own_index[len(pieces)] = index
            pieces.append(part)
    reasoning, _ = placed(pieces)
    # An index chatmem wrote is taken as written (the place alone gives it only when the
    # order is interleaved).
    at = [i for i, p in enumerate(pieces) if isinstance(p, ReasoningPart)]
    return [
        p.model_copy(update={"index": own_index[i]}) if i in own_index else p
        for p, i in zip(reasoning, at, strict=True)
    ]


_NO_INDEX = object()


def _thinking_in(block: li.ThinkingBlock) -> tuple[ReasoningPart, object]:
    information = dict(block.additional_information)
    signature = information.pop(_SIGNATURE, None)
    own = information.pop(ENVELOPE_KEY, None)
    own = dict(own) if isinstance(own, dict) else {}
    index = own.pop("index", _NO_INDEX)
    details = own.pop("details", information)
    fields = {**own, "text": block.content or "", "signature": signature}
    try:
        return ReasoningPart(**fields, details=details), index
    except ValueError:  # not what chatmem writes: what LlamaIndex holds, the stash keeps
        return ReasoningPart(text=block.content or ""), _NO_INDEX


_PLAIN_ROLES = frozenset({li.MessageRole.USER, li.MessageRole.SYSTEM, li.MessageRole.ASSISTANT})


def _is_plain(message: li.ChatMessage) -> bool:
    """Whether the core mapping gives ``message`` back as it is, without building it again.

    One plain text block, a role chatmem writes back as it is, nothing else: what apps
    put on every turn. Anything else is converted and compared (see ``_pieces``).
    """
    if (
        type(message) is not li.ChatMessage
        or message.role not in _PLAIN_ROLES
        or message.additional_kwargs
        or len(message.blocks) != 1
    ):
        return False
    (block,) = message.blocks
    return type(block) is li.TextBlock and block == li.TextBlock(text=block.text)


def _pieces(
    message: li.ChatMessage, names: dict[str, str], *, lossy: bool
) -> list[tuple[Message, bool]]:
    kind, fields = _fields(message, names)
    converted = kind.model_validate(fields)
    if _is_plain(message):
        return [(converted, False)]
    regenerated = _core(converted, dict(names), lossy=True)[0]
    if regenerated.model_dump(mode="json") != message.model_dump(mode="json"):
        try:
            stash = json.loads(json.dumps(message.model_dump(mode="json")))
        except (TypeError, ValueError) as exc:
            if not lossy:
                raise ConversionError(
                    "a LlamaIndex message holds fields that are not JSON; pass lossy=True"
                ) from exc
        else:
            converted = converted.model_copy(update={"metadata": {STASH_KEY: stash}})
            return [(converted, True)]
    return [(converted, False)]


def from_llama_index(
    messages: Iterable[li.ChatMessage],
    *,
    lossy: bool = False,
    tool_names: Mapping[str, str] | None = None,
) -> list[Message]:
    """Convert LlamaIndex chat messages to messages.

    A ``tool`` message is named after the ``ToolCallBlock`` it answers (LlamaIndex's tool
    messages carry only the call id).

    Args:
        messages: The messages, oldest first.
        lossy: Leave out fields that are not JSON instead of raising.
        tool_names: Tool names by call id, for results whose call came earlier than
            ``messages`` (as when a store appends one message at a time).

    Raises:
        ConversionError: For a role chatmem has no equivalent of, or (unless ``lossy``)
            fields that are not JSON.
    """
    out: list[Message] = []
    names: dict[str, str] = dict(tool_names or {})
    previous_kept = False
    for message in messages:
        for converted, kept in _pieces(message, names, lossy=lossy):
            previous = out[-1] if out else None
            if (
                isinstance(converted, ToolResponseMessage)
                and isinstance(previous, ToolResponseMessage)
                and not kept
                and not previous_kept
            ):
                responses = [*previous.responses, *converted.responses]
                out[-1] = previous.model_copy(update={"responses": responses})
            else:
                out.append(converted)
            previous_kept = kept
    return out

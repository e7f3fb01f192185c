"""Anthropic Messages API payloads (content blocks), both ways. Needs no package.

:func:`to_anthropic` returns the ``system`` and ``messages`` arguments of
``client.messages.create``: text, ``image``, ``document``, ``tool_use`` and
``tool_result`` blocks, and in assistant messages ``thinking`` and ``redacted_thinking``
blocks and any other block the API returned (a server tool's result, a compaction block),
in the order the API returned them. :func:`from_anthropic` takes them back, as dicts or as
the ``anthropic`` SDK's objects (``pip install "chatmem[anthropic]"`` installs the SDK).

Thinking becomes a :class:`~chatmem.ReasoningPart` (``thinking`` text and ``signature``; a
redacted block's ``data`` in ``signature``, with ``redacted=True``); any other assistant block
becomes a :class:`~chatmem.ProviderItem` holding the block as it came. Both are tagged with
``provider="anthropic"`` and carry an ``index`` when their order among the text and tool
calls is not the plain one (thinking first). The way back sends them only if their provider
is ``"anthropic"``: reasoning parts and items of another provider (or of none) are left out
silently, by the sending rule, whatever ``lossy`` says.

What the format cannot hold (a :class:`~chatmem.interop.ConversionError` unless
``lossy=True``, which leaves it out):

- message ids and creation times (the way back makes new ones) and metadata; the token usage
  and the model name of a response are not part of a request (they are read from a response
  object and left out of a request, without an error);
- more than one system message, or one that is not first (the system prompt is separate);
- the formatting of tool arguments other than ``json.dumps`` of the object, and arguments
  that are not a JSON object (an error even when lossy);
- the name of a tool result (recovered from the matching ``tool_use``) when it differs from
  the call's name, or a tool result whose call is not in the same list;
- media other than JPEG, PNG, GIF and WebP images and PDF or plain-text documents; image
  names; image MIME types the URL's extension does not tell; assistant media;
- a reasoning part's ``id`` or ``details``, the text of a redacted part, and a provider item
  whose ``data`` has another ``type`` than the item;
- the other way, several non-empty text blocks in one assistant message, or text after a
  ``tool_use`` block (chatmem keeps one text, before the tool calls).

Example:
    ```python
    from chatmem import SystemMessage, UserMessage
    from chatmem.interop.anthropic import from_anthropic, to_anthropic

    payload = to_anthropic([SystemMessage("Be brief."), UserMessage("Hi")])
    assert payload == {"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}]}
    assert [m.text for m in from_anthropic(**payload)] == ["Be brief.", "Hi"]
    ```
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.interop._common import (
    AssistantPart,
    ConversionError,
    arguments_to_object,
    object_to_arguments,
    parts_sent_to,
    placed,
)
from chatmem.interop._media import guess_mime
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

__all__ = ["PROVIDER", "from_anthropic", "to_anthropic", "usage_from_anthropic"]

PROVIDER = "anthropic"
"""Anthropic's ``gen_ai.provider.name``: the provider of the parts this module reads and sends."""

_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_DOCUMENTS = frozenset({"application/pdf", "text/plain"})


def _fail(lossy: bool, reason: str) -> None:
    if not lossy:
        raise ConversionError(f"Anthropic messages cannot hold {reason}; pass lossy=True")


def _refuse(lossy: bool, reason: str) -> None:
    # The other way: what chatmem's messages have no place for.
    if not lossy:
        raise ConversionError(
            f"chatmem cannot hold {reason} of an Anthropic message; pass lossy=True"
        )


def _source(media: Media) -> dict[str, Any]:
    if media.url is not None:
        return {"type": "url", "url": media.url}
    assert media.data is not None
    if media.mime_type == "text/plain":
        return {"type": "text", "media_type": "text/plain", "data": media.data.decode()}
    data = base64.b64encode(media.data).decode("ascii")
    return {"type": "base64", "media_type": media.mime_type, "data": data}


def _media_block(media: Media, lossy: bool) -> dict[str, Any] | None:
    if media.mime_type in _IMAGES:
        if media.name is not None:
            _fail(lossy, f"the name of an image ({media.name!r})")
        if media.url is not None and guess_mime(media.url, "") != media.mime_type:
            _fail(lossy, f"the MIME type {media.mime_type} of an image URL without that extension")
        return {"type": "image", "source": _source(media)}
    if media.mime_type in _DOCUMENTS and not (media.url and media.mime_type == "text/plain"):
        if media.mime_type == "text/plain" and media.data is not None:
            try:
                media.data.decode()
            except UnicodeDecodeError:
                _fail(lossy, "a text/plain document that is not UTF-8")
                return None
        if media.url is not None and guess_mime(media.url, "") != media.mime_type:
            _fail(lossy, "the MIME type of a PDF URL without the .pdf extension")
        block = {"type": "document", "source": _source(media)}
        if media.name is not None:
            block["title"] = media.name
        return block
    _fail(lossy, f"{media.mime_type} media")
    return None


def _user(message: UserMessage, lossy: bool) -> dict[str, Any]:
    if not message.media:
        return {"role": "user", "content": message.text}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks.extend(b for m in message.media if (b := _media_block(m, lossy)) is not None)
    return {"role": "user", "content": blocks}


def _reasoning_block(part: ReasoningPart, lossy: bool) -> dict[str, Any]:
    if part.id is not None:
        _fail(lossy, f"the id of a reasoning part ({part.id!r})")
    if part.details:
        _fail(lossy, "the details of a reasoning part")
    if part.redacted:
        if part.text:
            _fail(lossy, "the text of a redacted reasoning part")
        if part.signature is None:
            _fail(lossy, "a redacted reasoning part without data")
        return {"type": "redacted_thinking", "data": part.signature or ""}
    block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
    if part.signature is not None:
        block["signature"] = part.signature
    return block


def _item_block(item: ProviderItem, lossy: bool) -> dict[str, Any]:
    if item.data.get("type") != item.type:
        _fail(lossy, f"a provider item of type {item.type!r} whose data has another type")
    return dict(item.data)


def _assistant(message: AssistantMessage, lossy: bool) -> dict[str, Any]:
    if message.media:
        _fail(lossy, "media in an assistant message")
    parts = parts_sent_to(message, PROVIDER)
    if all(isinstance(part, str) for part in parts):
        return {"role": "assistant", "content": message.text}
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ToolCall):
            arguments = arguments_to_object(part.arguments, lossy=lossy, where="Anthropic tool_use")
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": arguments}
            )
        elif isinstance(part, ReasoningPart):
            blocks.append(_reasoning_block(part, lossy))
        elif isinstance(part, ProviderItem):
            blocks.append(_item_block(part, lossy))
        else:
            blocks.append({"type": "text", "text": part})
    return {"role": "assistant", "content": blocks}


def to_anthropic(messages: Sequence[Message], *, lossy: bool = False) -> dict[str, Any]:
    """Convert messages to the ``system`` and ``messages`` arguments of the Messages API.

    Args:
        messages: The messages, oldest first; a system message, if any, first.
        lossy: Leave out what the format cannot hold instead of raising (of several system
            messages, the last is kept).

    Returns:
        ``{"messages": [...]}``, with ``"system"`` too when there is a system message.

    Raises:
        ConversionError: If a message holds something the format cannot (see the module).
    """
    out: list[dict[str, Any]] = []
    system: str | None = None
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, EventMessage):
            continue  # an application's event is never sent to a model
        if message.metadata:
            _fail(lossy, f"message metadata (message {message.id})")
        if isinstance(message, SystemMessage):
            if system is not None or out:
                _fail(lossy, "a system message after other messages")
            system = message.text
        elif isinstance(message, UserMessage):
            out.append(_user(message, lossy))
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message, lossy))
            names.update((c.id, c.name) for c in message.tool_calls)
        else:
            for r in message.responses:
                if names.get(r.id) != r.name:
                    _fail(lossy, f"the name {r.name!r} of tool result {r.id!r} without its call")
            blocks = [
                {"type": "tool_result", "tool_use_id": r.id, "content": r.response_data}
                for r in message.responses
            ]
            out.append({"role": "user", "content": blocks})
    return {"messages": out} if system is None else {"system": system, "messages": out}


def _plain(item: object) -> Any:
    # An SDK object as the API sent it: the fields it had, explicit nulls included (a provider
    # item goes back verbatim), and none of the fields it did not have.
    dump = getattr(item, "model_dump", None)
    return dump(mode="json", exclude_unset=True, warnings=False) if callable(dump) else item


def _media_in(block: Mapping[str, Any], lossy: bool) -> Media | None:
    source = block["source"]
    kind = source.get("type")
    name = block.get("title") if block["type"] == "document" else None
    if kind == "base64":
        return Media(mime_type=source["media_type"], data=source["data"], name=name)
    if kind == "text":
        return Media(mime_type="text/plain", data=source["data"].encode(), name=name)
    if kind == "url":
        default = "image/*" if block["type"] == "image" else "application/pdf"
        return Media(mime_type=guess_mime(source["url"], default), url=source["url"], name=name)
    _refuse(lossy, f"a {kind!r} media source")
    return None


def _tool_result_text(block: Mapping[str, Any], lossy: bool) -> str:
    if block.get("is_error"):
        _refuse(lossy, "the is_error flag of a tool result")
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    if any(part.get("type") != "text" for part in content) or len(content) > 1:
        _refuse(lossy, "a tool result other than text")
    return "".join(part.get("text", "") for part in content)


def _user_in(content: Any, names: Mapping[str, str], lossy: bool) -> list[Message]:
    if isinstance(content, str):
        return [UserMessage(content)]
    texts: list[str] = []
    media: list[Media] = []
    responses: list[ToolResponse] = []
    for block in map(_plain, content):
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind in ("image", "document"):
            if (item := _media_in(block, lossy)) is not None:
                media.append(item)
        elif kind == "tool_result":
            call_id = block["tool_use_id"]
            if call_id not in names:
                raise ConversionError(f"tool result {call_id!r} answers no earlier tool_use")
            text = _tool_result_text(block, lossy)
            responses.append(ToolResponse(id=call_id, name=names[call_id], response_data=text))
        else:
            _refuse(lossy, f"a {kind!r} block in a user message")
    if len(texts) > 1:
        _refuse(lossy, "several text blocks in one user message")
    out: list[Message] = [ToolResponseMessage(responses=responses)] if responses else []
    if texts or media or not responses:
        out.append(UserMessage("".join(texts), media=media))
    return out


def usage_from_anthropic(usage: Mapping[str, Any]) -> TokenUsage:
    """Read the ``usage`` of a Messages API response.

    Anthropic counts the tokens read from and written to the prompt cache apart from
    ``input_tokens``; chatmem's input tokens include them.

    Args:
        usage: The response's ``usage`` object, as a dict.
    """
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return TokenUsage(
        input_tokens=int(usage.get("input_tokens") or 0) + read + written,
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _reasoning_in(block: Mapping[str, Any], model: str | None) -> ReasoningPart:
    if block["type"] == "redacted_thinking":
        return ReasoningPart(
            redacted=True, signature=block.get("data"), provider=PROVIDER, model=model
        )
    return ReasoningPart(
        text=block.get("thinking") or "",
        signature=block.get("signature"),
        provider=PROVIDER,
        model=model,
    )


def _assistant_in(
    message: Mapping[str, Any], names: dict[str, str], model: str | None, lossy: bool
) -> AssistantMessage:
    content = message.get("content", "")
    usage = message.get("usage")
    fields: dict[str, Any] = {"usage": usage_from_anthropic(usage)} if usage else {}
    if isinstance(content, str):
        return AssistantMessage(content, **fields)
    model = model or message.get("model")
    texts: list[str] = []
    text_at: int | None = None  # where the text stands among the parts
    parts: list[AssistantPart] = []
    for block in map(_plain, content):
        kind = block.get("type")
        if kind == "text":
            if not block["text"]:
                continue  # an empty text block: chatmem keeps no text
            if texts:
                _refuse(lossy, "several text blocks in one assistant message")
            elif any(isinstance(p, ToolCall) for p in parts):
                _refuse(lossy, "text after a tool_use block")
            texts.append(block["text"])
            text_at = len(parts) if text_at is None else text_at
        elif kind == "tool_use":
            arguments = object_to_arguments(block.get("input"))
            parts.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
            names[block["id"]] = block["name"]
        elif kind in ("thinking", "redacted_thinking"):
            parts.append(_reasoning_in(block, model))
        else:
            parts.append(ProviderItem(provider=PROVIDER, type=str(kind), data=block, model=model))
    if text_at is not None:  # lossy: the text of several blocks, and before the calls
        first_call = next((i for i, p in enumerate(parts) if isinstance(p, ToolCall)), text_at)
        parts.insert(min(text_at, first_call), "".join(texts))
    reasoning, items = placed(parts)
    calls = [p for p in parts if isinstance(p, ToolCall)]
    return AssistantMessage(
        "".join(texts), tool_calls=calls, reasoning=reasoning, provider_items=items, **fields
    )


def from_anthropic(
    messages: Iterable[object],
    *,
    system: str | Iterable[object] | None = None,
    model: str | None = None,
    lossy: bool = False,
) -> list[Message]:
    """Convert Messages API messages (dicts or SDK objects) and system prompt to messages.

    A user message's ``tool_result`` blocks become a tool response message, followed by a
    user message if it has text or media too; each result is named after its ``tool_use``.
    An assistant message's thinking blocks become reasoning parts and its other blocks
    (beyond text and ``tool_use``) provider items, in order; a response object (an SDK
    ``Message``) also gives its token usage and model.

    Args:
        messages: The messages, oldest first.
        system: The system prompt, as text or text blocks.
        model: The model that produced the assistant messages, recorded on their reasoning
            parts and provider items (a response object names its own).
        lossy: Leave out what chatmem cannot hold (``is_error``, unknown blocks in a user
            message, several text blocks in one answer) instead of raising.

    Raises:
        ConversionError: If a message has an unknown role or holds what chatmem cannot.
    """
    out: list[Message] = []
    if system is not None:
        if isinstance(system, str):
            out.append(SystemMessage(system))
        else:
            blocks = [_plain(b) for b in system]
            if len(blocks) != 1:
                _refuse(lossy, "a system prompt of several blocks")
            out.append(SystemMessage("".join(b.get("text", "") for b in blocks)))
    names: dict[str, str] = {}
    for item in messages:
        message = _plain(item)
        if not isinstance(message, Mapping):
            raise ConversionError(f"an Anthropic message must be a mapping, not {type(item)}")
        role = message.get("role")
        if role == "user":
            out.extend(_user_in(message.get("content", ""), names, lossy))
        elif role == "assistant":
            out.append(_assistant_in(message, names, model, lossy))
        else:
            raise ConversionError(f"unknown Anthropic message role {role!r}")
    return out

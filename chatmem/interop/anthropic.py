"""Anthropic Messages API payloads (content blocks), both ways. Needs no package.

:func:`to_anthropic` returns the ``system`` and ``messages`` arguments of
``client.messages.create``: text, ``image``, ``document``, ``tool_use`` and
``tool_result`` blocks. :func:`from_anthropic` takes them back, as dicts or as the
``anthropic`` SDK's objects (``pip install "chatmem[anthropic]"`` installs the SDK).

What the format cannot hold (a :class:`~chatmem.interop.ConversionError` unless
``lossy=True``, which leaves it out):

- message ids and creation times (the way back makes new ones) and metadata;
- more than one system message, or one that is not first (the system prompt is separate);
- the formatting of tool arguments other than ``json.dumps`` of the object, and arguments
  that are not a JSON object (an error even when lossy);
- the name of a tool result (recovered from the matching ``tool_use``) when it differs from
  the call's name, or a tool result whose call is not in the same list;
- media other than JPEG, PNG, GIF and WebP images and PDF or plain-text documents; image
  names; image MIME types the URL's extension does not tell; assistant media.

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

from chatmem.interop._common import ConversionError, arguments_to_object, object_to_arguments
from chatmem.interop._media import guess_mime
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

__all__ = ["from_anthropic", "to_anthropic"]

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


def _assistant(message: AssistantMessage, lossy: bool) -> dict[str, Any]:
    if message.media:
        _fail(lossy, "media in an assistant message")
    if not message.tool_calls:
        return {"role": "assistant", "content": message.text}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks.extend(
        {
            "type": "tool_use",
            "id": c.id,
            "name": c.name,
            "input": arguments_to_object(c.arguments, lossy=lossy, where="Anthropic tool_use"),
        }
        for c in message.tool_calls
    )
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
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else item


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


def _assistant_in(content: Any, names: dict[str, str], lossy: bool) -> AssistantMessage:
    if isinstance(content, str):
        return AssistantMessage(content)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in map(_plain, content):
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            arguments = object_to_arguments(block.get("input"))
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
            names[block["id"]] = block["name"]
        else:
            _refuse(lossy, f"a {kind!r} block in an assistant message")
    if len(texts) > 1:
        _refuse(lossy, "several text blocks in one assistant message")
    return AssistantMessage("".join(texts), tool_calls=calls)


def from_anthropic(
    messages: Iterable[object], *, system: str | Iterable[object] | None = None, lossy: bool = False
) -> list[Message]:
    """Convert Messages API messages (dicts or SDK objects) and system prompt to messages.

    A user message's ``tool_result`` blocks become a tool response message, followed by a
    user message if it has text or media too; each result is named after its ``tool_use``.

    Args:
        messages: The messages, oldest first.
        system: The system prompt, as text or text blocks.
        lossy: Leave out what chatmem cannot hold (``thinking`` blocks, ``is_error``, other
            block types) instead of raising.

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
            out.append(_assistant_in(message.get("content", ""), names, lossy))
        else:
            raise ConversionError(f"unknown Anthropic message role {role!r}")
    return out

"""OpenAI Chat Completions message dicts, both ways. Needs no package.

The dicts are the ``messages`` array of ``chat.completions.create``: a system message,
user messages with text and ``image_url`` / ``input_audio`` / ``file`` parts, assistant
messages with ``tool_calls``, and one ``tool`` message per tool result.

What the format cannot hold (a :class:`~chatmem.interop.ConversionError` unless
``lossy=True``, which leaves it out):

- message ids and creation times (never sent; the way back makes new ones) and metadata;
- the name of a tool result (recovered from the matching call on the way back) when it
  differs from the call's name, or a tool result whose call is not in the same list;
- two tool response messages in a row (they become one run of ``tool`` messages);
- media names except on files, images whose MIME type the URL's extension does not tell,
  audio by URL or in other formats than WAV and MP3, files by URL, assistant media.

Example:
    ```python
    from chatmem import AssistantMessage, UserMessage
    from chatmem.interop.openai import from_openai, to_openai

    payload = to_openai([UserMessage("Hi"), AssistantMessage("Hello!")])
    assert payload == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
    ]
    assert [m.text for m in from_openai(payload)] == ["Hi", "Hello!"]
    ```
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.interop._common import ConversionError
from chatmem.interop._media import data_url, guess_mime, parse_data_url
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = ["from_openai", "to_openai"]

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
_AUDIO_ALIASES = {"audio/x-wav": "wav", "audio/mp3": "mp3"}
_AUDIO_MIME = {fmt: mime for mime, fmt in _AUDIO_FORMATS.items()}


def _fail(lossy: bool, reason: str) -> None:
    if not lossy:
        raise ConversionError(f"OpenAI chat messages cannot hold {reason}; pass lossy=True")


def _refuse(lossy: bool, reason: str) -> None:
    # The other way: what chatmem's messages have no place for.
    if not lossy:
        raise ConversionError(
            f"chatmem cannot hold {reason} of an OpenAI chat message; pass lossy=True"
        )


def _media_part(media: Media, lossy: bool) -> dict[str, Any]:
    if media.mime_type.startswith("image/"):
        if media.name is not None:
            _fail(lossy, f"the name of an image ({media.name!r})")
        if media.url is not None and guess_mime(media.url, "image/*") != media.mime_type:
            _fail(lossy, f"the MIME type {media.mime_type} of an image URL without that extension")
        return {"type": "image_url", "image_url": {"url": data_url(media)}}
    audio_format = _AUDIO_FORMATS.get(media.mime_type) or _AUDIO_ALIASES.get(media.mime_type)
    if audio_format is not None and media.data is not None:
        if media.mime_type in _AUDIO_ALIASES or media.name is not None:
            _fail(lossy, f"audio typed {media.mime_type} or named ({media.name!r})")
        data = base64.b64encode(media.data).decode("ascii")
        return {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
    if media.url is not None:
        _fail(lossy, f"{media.mime_type} media by URL (files are sent inline)")
    file: dict[str, Any] = {"file_data": data_url(media)}
    if media.name:
        file["filename"] = media.name
    return {"type": "file", "file": file}


def _user(message: UserMessage, lossy: bool) -> dict[str, Any]:
    if not message.media:
        return {"role": "user", "content": message.text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    parts.extend(_media_part(m, lossy) for m in message.media)
    return {"role": "user", "content": parts}


def _assistant(message: AssistantMessage, lossy: bool) -> dict[str, Any]:
    if message.media:
        _fail(lossy, "media in an assistant message")
    payload: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        payload["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    elif payload["content"] is None:
        payload["content"] = ""
    return payload


def to_openai(messages: Sequence[Message], *, lossy: bool = False) -> list[dict[str, Any]]:
    """Convert messages to a Chat Completions ``messages`` array.

    Args:
        messages: The messages, oldest first.
        lossy: Leave out what the format cannot hold instead of raising.

    Raises:
        ConversionError: If a message holds something the format cannot (see the module).
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    previous: Message | None = None
    for message in messages:
        if isinstance(message, EventMessage):
            continue  # an application's event is never sent to a model
        if message.metadata:
            _fail(lossy, f"message metadata (message {message.id})")
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": message.text})
        elif isinstance(message, UserMessage):
            out.append(_user(message, lossy))
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message, lossy))
            names.update((c.id, c.name) for c in message.tool_calls)
        else:
            if isinstance(previous, ToolResponseMessage):
                _fail(lossy, "two tool response messages in a row")
            for r in message.responses:
                if names.get(r.id) != r.name:
                    _fail(lossy, f"the name {r.name!r} of tool result {r.id!r} without its call")
            out.extend(
                {"role": "tool", "tool_call_id": r.id, "content": r.response_data}
                for r in message.responses
            )
        previous = message
    return out


def _as_dict(item: object) -> Mapping[str, Any]:
    # SDK objects (pydantic models) are accepted as well as plain dicts.
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dict(dump(exclude_none=True))
    if isinstance(item, Mapping):
        return item
    raise ConversionError(f"an OpenAI chat message must be a mapping, not {type(item).__name__}")


def _text_of(content: Any, role: str, lossy: bool) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = [p.get("text", "") for p in content if p.get("type") == "text"]
    if len(texts) != len(content) or len(texts) > 1:
        _refuse(lossy, f"{role} content other than one text part")
    return "".join(texts)


def _media_in(part: Mapping[str, Any], lossy: bool) -> Media | None:
    kind = part.get("type")
    if kind == "image_url":
        url = part["image_url"]["url"]
        inline = parse_data_url(url)
        if inline is not None:
            return Media(mime_type=inline[0], data=inline[1])
        return Media(mime_type=guess_mime(url, "image/*"), url=url)
    if kind == "input_audio":
        audio = part["input_audio"]
        return Media(
            mime_type=_AUDIO_MIME.get(audio["format"], f"audio/{audio['format']}"),
            data=audio["data"],
        )
    if kind == "file":
        file = part["file"]
        inline = parse_data_url(file.get("file_data", ""))
        if inline is not None:
            return Media(mime_type=inline[0], data=inline[1], name=file.get("filename"))
    _refuse(lossy, f"a {kind!r} content part")
    return None


def _user_in(content: Any, lossy: bool) -> UserMessage:
    if content is None or isinstance(content, str):
        return UserMessage(content or "")
    texts: list[str] = []
    media: list[Media] = []
    for part in content:
        if part.get("type") == "text":
            texts.append(part["text"])
        elif (item := _media_in(part, lossy)) is not None:
            media.append(item)
    if len(texts) > 1:
        _refuse(lossy, "several text parts in one user message")
    return UserMessage("".join(texts), media=media)


def from_openai(messages: Iterable[object], *, lossy: bool = False) -> list[Message]:
    """Convert a Chat Completions ``messages`` array (dicts or SDK objects) to messages.

    ``developer`` messages become system messages; a run of ``tool`` messages becomes one
    tool response message, each result named after the call it answers.

    Args:
        messages: The messages, oldest first.
        lossy: Leave out what chatmem cannot hold (refusals, names, other part types)
            instead of raising.

    Raises:
        ConversionError: If a message has an unknown role, or holds something chatmem
            cannot, or a tool result answers no earlier call.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in messages:
        message = _as_dict(item)
        role = message.get("role")
        if message.get("name") or message.get("refusal"):
            _refuse(lossy, "the participant name or the refusal")
        if role in ("system", "developer"):
            out.append(SystemMessage(_text_of(message.get("content"), "system", lossy)))
        elif role == "user":
            out.append(_user_in(message.get("content"), lossy))
        elif role == "assistant":
            calls = [
                ToolCall(
                    id=c["id"],
                    name=c["function"]["name"],
                    arguments=c["function"].get("arguments") or "",
                )
                for c in message.get("tool_calls") or []
            ]
            names.update((c.id, c.name) for c in calls)
            text = _text_of(message.get("content"), "assistant", lossy)
            out.append(AssistantMessage(text, tool_calls=calls))
        elif role == "tool":
            call_id = str(message["tool_call_id"])
            if call_id not in names:
                raise ConversionError(f"tool result {call_id!r} answers no earlier tool call")
            response = ToolResponse(
                id=call_id,
                name=names[call_id],
                response_data=_text_of(message.get("content"), "tool", lossy),
            )
            if isinstance(out[-1], ToolResponseMessage):
                out[-1] = out[-1].model_copy(update={"responses": [*out[-1].responses, response]})
            else:
                out.append(ToolResponseMessage(responses=[response]))
        else:
            raise ConversionError(f"unknown OpenAI message role {role!r}")
    return out

"""OpenAI Responses API items, both ways. Needs no package.

:func:`to_responses` returns the ``input`` array of ``client.responses.create``;
:func:`from_responses` takes such an array, or a response's ``output``, back (as dicts or the
``openai`` SDK's objects). The items:

- ``message`` items: system (``developer`` on the way in), user (``input_text``,
  ``input_image``, ``input_file``) and assistant (``output_text``) messages;
- ``reasoning`` items: a :class:`~chatmem.messages.ReasoningPart` with ``provider="openai"``,
  the item's ``id``, its summary as ``text`` and its ``encrypted_content`` as ``signature``;
  several summary parts, and any other field of the item, are kept verbatim in ``details``;
- ``function_call`` items: tool calls (``call_id``, ``name``, ``arguments``), and
  ``function_call_output`` items: tool results;
- any other item in the assistant's turn (a ``compaction`` item, ...): a
  :class:`~chatmem.messages.ProviderItem` with ``provider="openai"``, kept verbatim.

The items of one assistant turn (reasoning, message, function calls, compaction) become one
:class:`~chatmem.messages.AssistantMessage`; their order is kept by the parts' ``index``.
The ids of the assistant's ``message`` and ``function_call`` items, which chatmem's messages
have no field for, are kept in its metadata under :data:`METADATA_KEY`.

The sending rule: a reasoning part or provider item goes into the items only if its provider
is ``"openai"``; one from another provider (an Anthropic thinking block) is left out, silently.

What the format cannot hold (a :class:`~chatmem.interop.ConversionError` unless
``lossy=True``, which leaves it out):

- message ids and creation times and token usage (never sent; the way back makes new ids),
  the model that produced a reasoning part or item (the way back stamps
  ``from_responses(model=...)``),
  and metadata other than :data:`METADATA_KEY` on assistant messages;
- two assistant messages in a row (their items would read back as one turn), and two tool
  response messages in a row;
- the name of a tool result (recovered from the matching call) when it differs from the
  call's name, or a tool result whose call is not in the same list;
- redacted reasoning; media names on images; image URLs whose extension does not tell the
  MIME type; audio; files by URL; assistant media;
- on the way back: several text parts in one message, several ``message`` items in one
  assistant turn (lossy joins their text), text annotations, refusals, non-text tool output,
  image details other than ``auto``.

Example:
    ```python
    from chatmem import AssistantMessage, ReasoningPart, UserMessage
    from chatmem.interop.openai_responses import from_responses, to_responses

    thought = ReasoningPart(text="Greet back.", signature="gAAA...", id="rs_1", provider="openai")
    items = to_responses([UserMessage("Hi"), AssistantMessage("Hello!", reasoning=[thought])])
    assert [item["type"] for item in items] == ["message", "reasoning", "message"]
    assert from_responses(items)[1].reasoning[0].signature == "gAAA..."
    ```
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.interop._common import ConversionError, parts_sent_to
from chatmem.interop._media import data_url, guess_mime, parse_data_url
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Media,
    Message,
    ProviderItem,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = ["METADATA_KEY", "PROVIDER", "from_responses", "to_responses"]

PROVIDER = "openai"
"""The provider name of the parts this format carries (``gen_ai.provider.name``)."""

METADATA_KEY = "openai_responses"
"""Assistant-message metadata key for item ids chatmem has no field for:
``{"message_id": "msg_...", "call_item_ids": {"call_...": "fc_..."}}``."""

# Fields of a reasoning item that have a field of their own on a ReasoningPart.
_REASONING_FIELDS = frozenset({"type", "id", "summary", "encrypted_content"})
# Item types that belong to the assistant's turn and have a chatmem field.
_TURN_TYPES = frozenset({"reasoning", "function_call"})


def _fail(lossy: bool, reason: str) -> None:
    if not lossy:
        raise ConversionError(f"OpenAI Responses items cannot hold {reason}; pass lossy=True")


def _refuse(lossy: bool, reason: str) -> None:
    # The other way: what chatmem's messages have no place for.
    if not lossy:
        raise ConversionError(
            f"chatmem cannot hold {reason} of an OpenAI Responses item; pass lossy=True"
        )


# -- chatmem -> items ------------------------------------------------------------------------


def _media_part(media: Media, lossy: bool) -> dict[str, Any] | None:
    if media.mime_type.startswith("image/"):
        if media.name is not None:
            _fail(lossy, f"the name of an image ({media.name!r})")
        if media.url is not None and guess_mime(media.url, "image/*") != media.mime_type:
            _fail(lossy, f"the MIME type {media.mime_type} of an image URL without that extension")
        return {"type": "input_image", "image_url": data_url(media), "detail": "auto"}
    if media.mime_type.startswith("audio/") or media.url is not None:
        _fail(lossy, f"{media.mime_type} media{' by URL' if media.url else ''}")
        return None
    part = {"type": "input_file", "file_data": data_url(media)}
    if media.name is not None:
        part["filename"] = media.name
    return part


def _user(message: UserMessage, lossy: bool) -> dict[str, Any]:
    if not message.media:
        return {"type": "message", "role": "user", "content": message.text}
    parts: list[dict[str, Any]] = (
        [{"type": "input_text", "text": message.text}] if message.text else []
    )
    parts.extend(p for m in message.media if (p := _media_part(m, lossy)) is not None)
    return {"type": "message", "role": "user", "content": parts}


def _reasoning_item(part: ReasoningPart, item_ids: bool, lossy: bool) -> dict[str, Any] | None:
    if part.redacted:
        _fail(lossy, "redacted reasoning")
        return None
    item: dict[str, Any] = {"type": "reasoning"}
    if item_ids and part.id is not None:
        item["id"] = part.id
    details = dict(part.details)
    summary = details.pop("summary", None)
    if summary is None:
        summary = [{"type": "summary_text", "text": part.text}] if part.text else []
    item["summary"] = summary
    if part.signature is not None:
        item["encrypted_content"] = part.signature
    item.update(details)
    return item


def _assistant(message: AssistantMessage, item_ids: bool, lossy: bool) -> list[dict[str, Any]]:
    if message.media:
        _fail(lossy, "media in an assistant message")
    ids = message.metadata.get(METADATA_KEY)
    ids = ids if isinstance(ids, dict) and item_ids else {}
    call_ids = ids.get("call_item_ids")
    call_ids = call_ids if isinstance(call_ids, dict) else {}
    out: list[dict[str, Any]] = []
    for part in parts_sent_to(message, PROVIDER):
        if isinstance(part, str):
            out.append(_assistant_text(part, ids.get("message_id")))
        elif isinstance(part, ToolCall):
            call = {
                "type": "function_call",
                "call_id": part.id,
                "name": part.name,
                "arguments": part.arguments,
            }
            if isinstance(item_id := call_ids.get(part.id), str):
                call["id"] = item_id
            out.append(call)
        elif isinstance(part, ReasoningPart):
            if (item := _reasoning_item(part, item_ids, lossy)) is not None:
                out.append(item)
        else:
            out.append(dict(part.data))
    if not out:
        # An empty answer is still a turn: without an item it would vanish on the way back.
        out.append(_assistant_text("", ids.get("message_id")))
    return out


def _assistant_text(text: str, item_id: object) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    if isinstance(item_id, str):
        item["id"] = item_id
        item["status"] = "completed"
    return item


def to_responses(
    messages: Sequence[Message], *, lossy: bool = False, item_ids: bool = True
) -> list[dict[str, Any]]:
    """Convert messages to a Responses API ``input`` array.

    Args:
        messages: The messages, oldest first.
        lossy: Leave out what the format cannot hold instead of raising.
        item_ids: Send the items' ids (reasoning, message and function call items). A
            request with ``store=False`` leaves them out: the API looks an item up by its id
            in the responses it stored, and finds nothing.

    Raises:
        ConversionError: If a message holds something the format cannot (see the module).
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    previous: Message | None = None
    for message in messages:
        if isinstance(message, EventMessage):
            continue  # an application's event is never sent to a model
        if message.metadata and (
            not isinstance(message, AssistantMessage) or set(message.metadata) != {METADATA_KEY}
        ):
            _fail(lossy, f"message metadata (message {message.id})")
        if isinstance(message, SystemMessage):
            out.append({"type": "message", "role": "system", "content": message.text})
        elif isinstance(message, UserMessage):
            out.append(_user(message, lossy))
        elif isinstance(message, AssistantMessage):
            if isinstance(previous, AssistantMessage):
                _fail(lossy, "two assistant messages in a row")
            out.extend(_assistant(message, item_ids, lossy))
            names.update((c.id, c.name) for c in message.tool_calls)
        else:
            if isinstance(previous, ToolResponseMessage):
                _fail(lossy, "two tool response messages in a row")
            for r in message.responses:
                if names.get(r.id) != r.name:
                    _fail(lossy, f"the name {r.name!r} of tool result {r.id!r} without its call")
            out.extend(
                {"type": "function_call_output", "call_id": r.id, "output": r.response_data}
                for r in message.responses
            )
        previous = message
    return out


# -- items -> chatmem ------------------------------------------------------------------------


def _as_dict(item: object) -> dict[str, Any]:
    # SDK objects (pydantic models) are accepted as well as plain dicts.
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json", exclude_none=True))
    if isinstance(item, Mapping):
        return dict(item)
    raise ConversionError(f"an OpenAI Responses item must be a mapping, not {type(item).__name__}")


def _texts(content: Any, kinds: frozenset[str], where: str, lossy: bool) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts: list[str] = []
    for part in content:
        kind = part.get("type")
        if kind in kinds:
            if part.get("annotations"):
                _refuse(lossy, "text annotations")
            texts.append(part.get("text", ""))
        else:
            _refuse(lossy, f"a {kind!r} part in {where}")
    if len(texts) > 1:
        _refuse(lossy, f"several text parts in {where}")
    return "".join(texts)


def _media_in(part: Mapping[str, Any], lossy: bool) -> Media | None:
    kind = part.get("type")
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        if part.get("detail", "auto") != "auto":
            _refuse(lossy, f"the image detail {part.get('detail')!r}")
        url = part["image_url"]
        inline = parse_data_url(url)
        if inline is not None:
            return Media(mime_type=inline[0], data=inline[1])
        return Media(mime_type=guess_mime(url, "image/*"), url=url)
    if kind == "input_file" and isinstance(part.get("file_data"), str):
        inline = parse_data_url(part["file_data"])
        if inline is not None:
            return Media(mime_type=inline[0], data=inline[1], name=part.get("filename"))
    _refuse(lossy, f"a {kind!r} content part without inline data")
    return None


def _user_in(content: Any, lossy: bool) -> UserMessage:
    if content is None or isinstance(content, str):
        return UserMessage(content or "")
    texts: list[str] = []
    media: list[Media] = []
    for part in content:
        if part.get("type") == "input_text":
            texts.append(part.get("text", ""))
        elif (item := _media_in(part, lossy)) is not None:
            media.append(item)
    if len(texts) > 1:
        _refuse(lossy, "several text parts in one user message")
    return UserMessage("".join(texts), media=media)


def _reasoning_in(item: Mapping[str, Any], model: str | None) -> ReasoningPart:
    summary = item.get("summary") or []
    details = {k: v for k, v in item.items() if k not in _REASONING_FIELDS}
    one_text = len(summary) == 1 and set(summary[0]) == {"type", "text"}
    if one_text and summary[0]["type"] == "summary_text":
        text = summary[0]["text"]
    else:
        # Several summary parts (or an unknown kind) go back verbatim; the text joins them
        # for readers such as the token window and `chatmem show`.
        text = "\n\n".join(str(p.get("text", "")) for p in summary)
        if summary:
            details["summary"] = summary
    return ReasoningPart(
        text=text,
        signature=item.get("encrypted_content"),
        id=item.get("id"),
        provider=PROVIDER,
        model=model,
        details=details,
    )


class _Turn:
    """The items of one assistant turn, gathered into one assistant message."""

    def __init__(self) -> None:
        self.parts: list[ReasoningPart | ProviderItem | str | ToolCall] = []
        self.message_id: str | None = None
        self.call_item_ids: dict[str, str] = {}

    def add_text(self, item: Mapping[str, Any], lossy: bool) -> None:
        text = _texts(
            item.get("content"), frozenset({"output_text"}), "an assistant message", lossy
        )
        if any(isinstance(p, str) for p in self.parts):
            _refuse(lossy, "several message items in one assistant turn")
            index = next(i for i, p in enumerate(self.parts) if isinstance(p, str))
            self.parts[index] = f"{self.parts[index]}{text}"
        else:
            self.parts.append(text)
        if isinstance(item.get("id"), str) and self.message_id is None:
            self.message_id = item["id"]

    def add_call(self, item: Mapping[str, Any]) -> ToolCall:
        call = ToolCall(id=item["call_id"], name=item["name"], arguments=item.get("arguments", ""))
        if isinstance(item.get("id"), str):
            self.call_item_ids[call.id] = item["id"]
        self.parts.append(call)
        return call

    def message(self) -> AssistantMessage:
        text = "".join(p for p in self.parts if isinstance(p, str))
        # Empty text takes no place among the parts (the index rule), so it is dropped here.
        parts = [p for p in self.parts if not isinstance(p, str) or text]
        extras = [
            (i, p) for i, p in enumerate(parts) if isinstance(p, ReasoningPart | ProviderItem)
        ]
        # Indexes only where the order differs from the natural one (reasoning, then provider
        # items, then text and tool calls), so a plain turn stores no index at all.
        natural = sorted(extras, key=lambda e: isinstance(e[1], ProviderItem))
        indexed = [i for i, _ in extras] != list(range(len(extras))) or natural != extras
        reasoning: list[ReasoningPart] = []
        items: list[ProviderItem] = []
        for i, part in extras:
            placed = part.model_copy(update={"index": i}) if indexed else part
            (reasoning if isinstance(placed, ReasoningPart) else items).append(placed)  # type: ignore[arg-type]
        metadata: dict[str, Any] = {}
        ids: dict[str, Any] = {}
        if self.message_id is not None:
            ids["message_id"] = self.message_id
        if self.call_item_ids:
            ids["call_item_ids"] = self.call_item_ids
        if ids:
            metadata[METADATA_KEY] = ids
        calls = [p for p in parts if isinstance(p, ToolCall)]
        return AssistantMessage(
            text, tool_calls=calls, reasoning=reasoning, provider_items=items, metadata=metadata
        )


def _add_result(
    out: list[Message], item: Mapping[str, Any], names: Mapping[str, str], lossy: bool
) -> None:
    # A run of function_call_output items becomes one tool response message.
    call_id = str(item.get("call_id"))
    if call_id not in names:
        raise ConversionError(f"tool result {call_id!r} answers no earlier tool call")
    output = item.get("output")
    if not isinstance(output, str):
        _refuse(lossy, "tool output other than text")
        output = _texts(output, frozenset({"input_text"}), "a tool output", True)
    response = ToolResponse(id=call_id, name=names[call_id], response_data=output)
    if out and isinstance(out[-1], ToolResponseMessage):
        out[-1] = out[-1].model_copy(update={"responses": [*out[-1].responses, response]})
    else:
        out.append(ToolResponseMessage(responses=[response]))


def _message_in(item: Mapping[str, Any], lossy: bool) -> Message:
    role = item.get("role")
    content = item.get("content")
    if role in ("system", "developer"):
        return SystemMessage(_texts(content, frozenset({"input_text"}), str(role), lossy))
    if role == "user":
        return _user_in(content, lossy)
    raise ConversionError(f"unknown OpenAI Responses message role {role!r}")


def from_responses(
    items: Iterable[object], *, model: str | None = None, lossy: bool = False
) -> list[Message]:
    """Convert a Responses API ``input`` array, or a response's ``output``, to messages.

    Consecutive items of the assistant's turn (reasoning, assistant messages, function calls,
    compaction and other provider items) become one assistant message; a run of
    ``function_call_output`` items becomes one tool response message.

    Args:
        items: The items, oldest first (dicts or the ``openai`` SDK's objects).
        model: The model that produced the reasoning parts and provider items, recorded on
            them.
        lossy: Leave out what chatmem cannot hold instead of raising.

    Raises:
        ConversionError: If an item is malformed or holds something chatmem cannot, or a
            tool result answers no earlier call.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    turn: _Turn | None = None

    def close_turn() -> None:
        nonlocal turn
        if turn is not None:
            out.append(turn.message())
            turn = None

    for raw in items:
        item = _as_dict(raw)
        kind = item.get("type", "message" if "role" in item else None)
        role = item.get("role")
        if (kind == "message" and role == "assistant") or kind in _TURN_TYPES:
            turn = turn or _Turn()
            if kind == "message":
                turn.add_text(item, lossy)
            elif kind == "reasoning":
                turn.parts.append(_reasoning_in(item, model))
            else:
                call = turn.add_call(item)
                names[call.id] = call.name
            continue
        if kind == "function_call_output":
            close_turn()
            _add_result(out, item, names, lossy)
            continue
        if kind == "message":
            close_turn()
            out.append(_message_in(item, lossy))
            continue
        if not isinstance(kind, str):
            raise ConversionError(f"an OpenAI Responses item without a type: {str(item)[:60]}")
        # Anything else the provider returned in the turn (compaction, ...) goes back verbatim.
        turn = turn or _Turn()
        turn.parts.append(ProviderItem(provider=PROVIDER, type=kind, data=item, model=model))
    close_turn()
    return out

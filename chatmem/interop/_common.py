"""Helpers shared by the converters: errors, imports, envelopes, arguments, names, part order."""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections import deque
from collections.abc import Collection, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any, TypeAlias

from chatmem.exceptions import ChatMemError
from chatmem.messages import (
    AssistantMessage,
    Message,
    ProviderItem,
    ReasoningPart,
    ToolCall,
    ToolResponseMessage,
)

__all__ = [
    "ENVELOPE_KEY",
    "AssistantPart",
    "ConversionError",
    "arguments_to_object",
    "assistant_parts",
    "call_names",
    "envelope_of",
    "exact_fields",
    "field_defaults",
    "holds_defaults",
    "object_to_arguments",
    "parts_for_provider",
    "parts_sent_to",
    "placed",
    "require",
    "same_content",
    "unnamed_results",
    "with_envelope",
]

ENVELOPE_KEY = "chatmem"
"""Key under which formats with a free-form field keep a message's id, time and metadata."""


class ConversionError(ChatMemError, ValueError):
    """A message holds something the target format cannot, or a payload is not a message.

    Converters raise it instead of leaving anything out. Pass ``lossy=True`` to a converter
    to leave out what the format cannot hold instead (the documented list per format).
    """


def require(module: str, extra: str) -> ModuleType:
    """Import an optional framework package, naming the install line when it is missing.

    Args:
        module: The package to import.
        extra: The chatmem extra that installs it.

    Raises:
        ImportError: If the package is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f'this chatmem.interop module needs {module!r}: pip install "chatmem[{extra}]"'
        ) from exc


def arguments_to_object(arguments: str, *, lossy: bool, where: str) -> dict[str, Any]:
    """Parse tool-call arguments for a format that holds them as a JSON object.

    Args:
        arguments: The JSON text chatmem keeps.
        lossy: Accept text whose formatting the object cannot reproduce.
        where: The format's name, for errors.

    Raises:
        ConversionError: If the text is not a JSON object, or (unless ``lossy``) if
            :func:`object_to_arguments` would not give the same text back.
    """
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError as exc:
        raise ConversionError(
            f"{where} holds tool arguments as a JSON object; {arguments[:60]!r} is not JSON"
        ) from exc
    if not isinstance(value, dict):
        raise ConversionError(
            f"{where} holds tool arguments as a JSON object; {arguments[:60]!r} is not one"
        )
    if not lossy and object_to_arguments(value) != arguments:
        raise ConversionError(
            f"{where} holds tool arguments as an object, so the formatting of "
            f"{arguments[:60]!r} would be lost (chatmem writes {object_to_arguments(value)!r}); "
            "pass lossy=True to re-serialize"
        )
    return value


def object_to_arguments(value: Any) -> str:
    """Write tool-call arguments held as an object the way chatmem stores them.

    The same text LangChain and the OpenAI SDK write (``json.dumps``, non-ASCII kept), so
    arguments that came from them come back unchanged.

    Args:
        value: The arguments object.
    """
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def envelope_of(message: Message) -> dict[str, Any]:
    """Return the JSON envelope (id, creation time, metadata) of a message.

    Args:
        message: The message.
    """
    envelope: dict[str, Any] = {"id": message.id, "created_at": message.created_at.isoformat()}
    if message.metadata:
        envelope["metadata"] = message.metadata
    return envelope


def with_envelope(fields: dict[str, Any], envelope: object) -> dict[str, Any]:
    """Add the envelope written by :func:`envelope_of` to a message's constructor fields.

    Args:
        fields: The message fields converted so far.
        envelope: The stored envelope, or ``None``.

    Raises:
        ConversionError: If the envelope is malformed.
    """
    if envelope is None:
        return fields
    if not isinstance(envelope, dict):
        raise ConversionError(f"the {ENVELOPE_KEY!r} envelope must be an object")
    try:
        fields["id"] = str(envelope["id"])
        fields["created_at"] = datetime.fromisoformat(str(envelope["created_at"]))
    except (KeyError, ValueError) as exc:
        raise ConversionError(f"the {ENVELOPE_KEY!r} envelope is malformed: {exc}") from exc
    if "metadata" in envelope:
        fields["metadata"] = {**envelope["metadata"], **fields.get("metadata", {})}
    return fields


_NO_DEFAULT = object()  # equal to nothing: a field without a default is never "at its default"


def field_defaults(kind: type, *, skip: Collection[str]) -> dict[str, Any]:
    """Return the default of each field of a pydantic model class or a dataclass.

    A framework's message class, read once, so that a converter can tell cheaply whether a
    message sets anything beyond the fields it maps (see :func:`holds_defaults`).

    Args:
        kind: A pydantic model class or a dataclass.
        skip: Fields left out (those the converter maps itself).
    """
    if dataclasses.is_dataclass(kind):
        return {
            f.name: _dataclass_default(f) for f in dataclasses.fields(kind) if f.name not in skip
        }
    fields: dict[str, Any] = kind.model_fields  # type: ignore[attr-defined]
    return {name: _model_default(f) for name, f in fields.items() if name not in skip}


def _dataclass_default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return _NO_DEFAULT


def _model_default(field: Any) -> Any:
    if field.default_factory is not None:
        return field.default_factory()
    return _NO_DEFAULT if field.is_required() else field.default


def holds_defaults(value: object, defaults: dict[str, Any]) -> bool:
    """Whether every field named in ``defaults`` (see :func:`field_defaults`) holds its default.

    Args:
        value: An instance of the class the defaults were read from.
        defaults: Field name -> default.
    """
    return all(getattr(value, name) == default for name, default in defaults.items())


def call_names(latest: Message | None) -> dict[str, str]:
    """Return tool names by call id for tool results added after their call.

    Frameworks add a tool result in a later call than the assistant message that made the
    call, and their tool messages may carry only the call id: such a result is named after the
    calls of the conversation's newest assistant message.

    Args:
        latest: The conversation's newest assistant message, or ``None``.
    """
    if isinstance(latest, AssistantMessage):
        return {c.id: c.name for c in latest.tool_calls}
    return {}


def unnamed_results(messages: Sequence[Message]) -> bool:
    """Whether a converted tool result has no tool name (its call was not among the messages).

    Args:
        messages: Converted messages.
    """
    return any(
        not r.name for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses
    )


AssistantPart: TypeAlias = ReasoningPart | ProviderItem | str | ToolCall
"""One part of an assistant message in provider order: a reasoning part, a provider item, the
text (a ``str``) or a tool call."""


def assistant_parts(message: AssistantMessage) -> list[AssistantPart]:
    """Return an assistant message's parts in the order the provider returned them.

    Reasoning parts and provider items with an ``index`` take that place; the other places
    are filled, in order, by those without one, then the text (when not empty), then the tool
    calls (see :attr:`chatmem.messages.ReasoningPart.index`). An index beyond the end puts
    the part last.

    Args:
        message: The assistant message.
    """
    extras: list[ReasoningPart | ProviderItem] = [*message.reasoning, *message.provider_items]
    floating: deque[AssistantPart] = deque(part for part in extras if part.index is None)
    if message.text:
        floating.append(message.text)
    floating.extend(message.tool_calls)
    fixed = deque(sorted((p for p in extras if p.index is not None), key=_index))
    out: list[AssistantPart] = []
    while floating or fixed:
        if fixed and (_index(fixed[0]) <= len(out) or not floating):
            out.append(fixed.popleft())
        else:
            out.append(floating.popleft())
    return out


def _index(part: ReasoningPart | ProviderItem) -> int:
    return part.index if part.index is not None else -1


def parts_for_provider(
    message: AssistantMessage, provider: str
) -> tuple[list[ReasoningPart], list[ProviderItem]]:
    """Return the reasoning parts and provider items of a message that may go to a provider.

    The sending rule: a part goes back only to the provider that produced it
    (``part.provider == provider``); any other part, and a part whose provider is unknown, is
    left out, silently. The provider checks the rest (an Anthropic signature is bound to the
    model that made it, and Anthropic refuses one that does not match).

    Args:
        message: The assistant message.
        provider: The provider the request goes to, as in ``gen_ai.provider.name``.

    Returns:
        The reasoning parts and the provider items to send, each in list order.
    """
    reasoning = [p for p in message.reasoning if p.provider == provider]
    items = [i for i in message.provider_items if i.provider == provider]
    return reasoning, items


def parts_sent_to(message: AssistantMessage, provider: str) -> list[AssistantPart]:
    """Return the parts of :func:`assistant_parts` that go to a provider, in their order.

    The order is taken with every part in place, then the parts of other providers are left
    out (:func:`parts_for_provider`'s rule), so the rest keep the order they were returned in.

    Args:
        message: The assistant message.
        provider: The provider the request goes to, as in ``gen_ai.provider.name``.
    """
    reasoning, items = parts_for_provider(message, provider)
    sent = {id(p) for p in (*reasoning, *items)}
    return [
        p
        for p in assistant_parts(message)
        if not isinstance(p, ReasoningPart | ProviderItem) or id(p) in sent
    ]


def placed(
    parts: Sequence[AssistantPart],
) -> tuple[list[ReasoningPart], list[ProviderItem]]:
    """Return the reasoning parts and provider items of ``parts``, indexed as they stand.

    The inverse of :func:`assistant_parts` for a framework's list of parts: when every
    reasoning part and provider item comes before the text and the tool calls, and the
    reasoning parts before the items, none gets an index (the usual order); otherwise each
    gets its place, counting the text once (where its first non-empty piece stands).

    Args:
        parts: A message's parts in the framework's order (texts may be several pieces).
    """
    places: list[tuple[ReasoningPart | ProviderItem, int]] = []
    seen_text = seen_other = seen_item = interleaved = False
    slot = 0
    for part in parts:
        if isinstance(part, str):
            if not part or seen_text:
                continue
            seen_text = seen_other = True
        elif isinstance(part, ToolCall):
            seen_other = True
        else:
            # Without indexes, reasoning parts come first, then provider items: an item
            # before a reasoning part needs its place too.
            interleaved = (
                interleaved or seen_other or (seen_item and isinstance(part, ReasoningPart))
            )
            seen_item = seen_item or isinstance(part, ProviderItem)
            places.append((part, slot))
        slot += 1
    indexed = [p.model_copy(update={"index": i}) if interleaved else p for p, i in places]
    return (
        [p for p in indexed if isinstance(p, ReasoningPart)],
        [p for p in indexed if isinstance(p, ProviderItem)],
    )


_ENVELOPE_FIELDS = frozenset({"id", "created_at", "metadata"})
_REASONING_FIELDS = frozenset({"reasoning", "provider_items", "usage"})


def same_content(converted: Message, stored: Message) -> bool:
    """Whether a framework's stashed message still says what the stored message says.

    The envelope (id, time, metadata) is not compared. A stored assistant message without
    reasoning, provider items and usage may have been written before chatmem held them, when
    the stash alone kept a framework's reasoning: those fields are not compared for it, so
    its stash still gives the framework's message back whole.

    Args:
        converted: The stash, converted to a message.
        stored: The stored message that holds the stash.
    """
    excluded = set(_ENVELOPE_FIELDS)
    if isinstance(stored, AssistantMessage) and not (
        stored.reasoning or stored.provider_items or stored.usage is not None
    ):
        excluded |= _REASONING_FIELDS
    return converted.model_dump(exclude=excluded) == stored.model_dump(exclude=excluded)


def exact_fields(message: AssistantMessage, again: AssistantMessage) -> dict[str, Any]:
    """Return, as JSON, the reasoning, provider items and usage ``again`` does not give back.

    A converter reads its own output back as ``again``; what differs from ``message`` is kept
    in chatmem's envelope, so the round trip is exact.

    Args:
        message: The assistant message converted.
        again: Its conversion read back.
    """
    out: dict[str, Any] = {}
    for name in sorted(_REASONING_FIELDS):
        value = getattr(message, name)
        if getattr(again, name) == value:
            continue
        if isinstance(value, list):
            out[name] = [part.model_dump(mode="json") for part in value]
        else:
            out[name] = value.model_dump(mode="json") if value is not None else None
    return out

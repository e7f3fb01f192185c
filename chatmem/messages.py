"""Chat messages and the one JSON codec every repository uses.

Four message types follow Spring AI's names and values: :class:`SystemMessage`,
:class:`UserMessage` (text plus optional media), :class:`AssistantMessage` (text plus tool
calls, and for reasoning models their :class:`ReasoningPart` s, provider-native
:class:`ProviderItem` s and :class:`TokenUsage`) and :class:`ToolResponseMessage` (tool results
matched to calls by id). A fifth, :class:`EventMessage`, is an application's own event
kept in the same ordered log (a namespaced type and a JSON payload): never sent to a model,
never folded into a summary, never evicted. Every message
carries an ``id`` (a UUIDv7 string that makes appends idempotent), ``created_at`` (UTC) and
JSON ``metadata``. Messages are immutable.

Example:
    >>> from chatmem.messages import UserMessage, encode_message, decode_message
    >>> message = UserMessage("What is my name?")
    >>> decode_message(encode_message(message)) == message
    True
"""

from __future__ import annotations

import base64
import binascii
import json
import operator
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache, partial
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, cast, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetPydanticSchema,
    JsonValue,
    PlainSerializer,
    PlainValidator,
    SerializationInfo,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import CoreSchema, SchemaValidator, core_schema

from chatmem._uuid7 import uuid7
from chatmem.exceptions import MessageDecodeError

__all__ = [
    "CHAT_MESSAGE_TYPES",
    "CODEC_VERSION",
    "EVENT_TYPE_PATTERN",
    "MAX_EVENT_TYPE_LENGTH",
    "AssistantMessage",
    "EventMessage",
    "Media",
    "Message",
    "MessageType",
    "ProviderItem",
    "ReasoningPart",
    "SystemMessage",
    "TokenUsage",
    "ToolCall",
    "ToolResponse",
    "ToolResponseMessage",
    "UserMessage",
    "decode_message",
    "decode_messages",
    "encode_message",
    "message_text",
    "searchable_text",
]

CODEC_VERSION = 1
"""Version written into every encoded message; bumped when the stored shape changes."""


class MessageType(StrEnum):
    """The role of a message, with Spring AI's values."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"
    EVENT = "event"
    """An application's own event (:class:`EventMessage`), never sent to a model."""


CHAT_MESSAGE_TYPES: frozenset[MessageType] = frozenset(
    {MessageType.USER, MessageType.ASSISTANT, MessageType.TOOL}
)
"""The types that make up a conversation's turns: what a memory window is made of."""


# The default creation time: a C-level call, no Python frame per message.
_utc_now: Callable[[], datetime] = partial(datetime.now, UTC)


def _type_as_text(source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
    # A message's type is written to JSON as its text by str() (a C call): pydantic-core's
    # serializer of an enum literal goes through Python and costs as much as the rest of
    # the message. The JSON schema is unchanged (the return schema is the same literal).
    schema = handler(source)
    values = [member.value for member in cast(core_schema.LiteralSchema, schema)["expected"]]
    return cast(
        CoreSchema,
        {
            **schema,
            "serialization": core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.literal_schema(values), when_used="json"
            ),
        },
    )


_TypeAsText = GetPydanticSchema(_type_as_text)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _bytes_in(value: object) -> bytes:
    # Raw bytes are taken as they are; text is base64, which is how JSON carries bytes.
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"media data is not valid base64: {exc}") from exc
    raise ValueError("media data must be bytes or base64 text")


def _bytes_out(value: bytes, info: SerializationInfo) -> bytes | str:
    return base64.b64encode(value).decode("ascii") if info.mode_is_json() else value


_InlineBytes = Annotated[bytes, PlainValidator(_bytes_in), PlainSerializer(_bytes_out)]


class Media(_Frozen):
    """A media part of a message: an image, audio or a file, by URL or inline bytes.

    Exactly one of ``url`` and ``data`` is set. Inline bytes are base64 in JSON.
    """

    mime_type: str
    """The MIME type, such as ``image/png``."""
    url: str | None = None
    """Where the media lives, if it is not inline."""
    data: _InlineBytes | None = None
    """The raw bytes, if the media is inline."""
    name: str | None = None
    """An optional file name or label."""

    @model_validator(mode="after")
    def _one_source(self) -> Media:
        if (self.url is None) == (self.data is None):
            raise ValueError("media needs exactly one of url and data")
        return self


class ToolCall(_Frozen):
    """A call to a tool requested by the assistant."""

    id: str
    """The provider's call id; the matching :class:`ToolResponse` carries the same id."""
    name: str
    """The tool's name."""
    arguments: str
    """The arguments, as the JSON text the model produced (kept exactly as given)."""


class ToolResponse(_Frozen):
    """The result of one tool call."""

    id: str
    """The id of the :class:`ToolCall` this answers."""
    name: str
    """The tool's name."""
    response_data: str
    """The result, as text (usually JSON)."""


# A field left out of the stored JSON while it holds its default: messages of models that do
# not reason are written byte for byte as before these fields existed, and read back equal.
# operator.not_ is a C function, so the check costs no Python frame per message.
_OMITTED_WHEN_EMPTY: Any = {"exclude_if": operator.not_}


class ReasoningPart(_Frozen):
    """What a reasoning model thought before it answered, kept to be sent back to it.

    Anthropic's ``thinking`` and ``redacted_thinking`` blocks, OpenAI's Responses API
    ``reasoning`` items, pydantic-ai's ``ThinkingPart``, LangChain's ``reasoning`` blocks and
    LlamaIndex's ``ThinkingBlock`` all become a reasoning part. The provider checks what comes
    back: ``signature`` must be returned byte for byte, and only to the ``provider`` (and,
    where signatures are bound to it, the ``model``) that produced it.

    Example:
        >>> part = ReasoningPart(text="The user asked for...", signature="EqQB...",
        ...                      provider="anthropic", model="claude-sonnet-4-5")
        >>> AssistantMessage("Hello", reasoning=[part]).reasoning[0].signature
        'EqQB...'
    """

    text: str = ""
    """The reasoning text, or its summary where the provider returns only a summary; empty
    for a redacted part."""
    signature: str | None = None
    """The provider's proof or encrypted form of the reasoning, returned to it unchanged:
    Anthropic's ``signature`` (or a redacted block's ``data``), OpenAI's
    ``encrypted_content``."""
    redacted: bool = False
    """True for reasoning the provider returned only in encrypted form (Anthropic's
    ``redacted_thinking``): ``text`` is empty and ``signature`` holds the data."""
    id: str | None = None
    """The provider's id for the part (an OpenAI reasoning item's ``id``), if it has one."""
    provider: str | None = None
    """Who produced it, as in OpenTelemetry's ``gen_ai.provider.name`` (``"anthropic"``,
    ``"openai"``, ...); None if unknown, and then it is sent to no provider."""
    model: str | None = None
    """The model that produced it, if known."""
    index: int | None = None
    """Its place among the assistant message's parts as the provider returned them, where
    the order matters (interleaved thinking): the parts are the reasoning parts and
    provider items at their indexes, and in the remaining places, in order, the message's
    text (when not empty) and then its tool calls. None places it before text and tool calls,
    in list order."""
    details: dict[str, JsonValue] = Field(default_factory=dict, **_OMITTED_WHEN_EMPTY)
    """Provider-specific fields kept verbatim (for example OpenAI's summary parts when there
    are several), so the part goes back exactly as it came."""


class ProviderItem(_Frozen):
    """A provider-native item that has no chatmem equivalent and must go back verbatim.

    For example an OpenAI Responses ``compaction`` item or an Anthropic context-management
    result. It is replayed only to the ``provider`` that produced it and left out, by rule,
    for any other.

    Example:
        >>> item = ProviderItem(provider="openai", type="compaction",
        ...                     data={"type": "compaction", "encrypted_content": "gAAA..."})
        >>> item.type
        'compaction'
    """

    provider: str
    """Who produced it, as in OpenTelemetry's ``gen_ai.provider.name``."""
    type: str
    """The provider's name for the kind of item (``"compaction"``, ...)."""
    data: dict[str, JsonValue]
    """The item exactly as the provider's API returned it."""
    model: str | None = None
    """The model that produced it, if known."""
    index: int | None = None
    """Its place among the message's parts, as for :attr:`ReasoningPart.index`."""


class TokenUsage(_Frozen):
    """Tokens one model call used, as the provider reported and bills them.

    Example:
        >>> TokenUsage(input_tokens=1200, output_tokens=80, cache_read_tokens=1024).input_tokens
        1200
    """

    input_tokens: int = Field(default=0, ge=0)
    """Prompt tokens, including those read from or written to the cache."""
    output_tokens: int = Field(default=0, ge=0)
    """Generated tokens, including reasoning tokens."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Of the output tokens, those spent on reasoning."""
    cache_read_tokens: int = Field(default=0, ge=0)
    """Of the input tokens, those read from the provider's prompt cache."""
    cache_write_tokens: int = Field(default=0, ge=0)
    """Of the input tokens, those written to the provider's prompt cache."""


class _BaseMessage(_Frozen):
    # The fields of each message class that hold text, and those that hold parts (tool
    # calls, tool results, media): the surrogate check reads them without looking for them.
    _text_fields: ClassVar[tuple[str, ...]] = ()
    _part_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        fields = cls.model_fields.items()
        cls._text_fields = tuple(name for name, field in fields if field.annotation is str)
        cls._part_fields = tuple(
            name for name, field in fields if get_origin(field.annotation) is list
        )

    id: str = Field(default_factory=uuid7)
    """Unique id (UUIDv7 by default). Re-appending an id already stored is a no-op."""
    created_at: datetime = Field(default_factory=_utc_now)
    """When the message was created, in UTC. Never used for ordering."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Free-form JSON metadata, stored losslessly."""

    @field_validator("created_at")
    @classmethod
    def _as_utc(cls, value: datetime) -> datetime:
        # Naive datetimes are taken as UTC; aware ones are converted, so equality holds
        # after a round trip through any store.
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    @field_validator("id")
    @classmethod
    def _non_empty_id(cls, value: str) -> str:
        if not value:
            raise ValueError("message id must not be empty")
        return value

    @model_validator(mode="after")
    def _encodable(self) -> _BaseMessage:
        # A lone surrogate cannot be written as UTF-8 by any store or by the JSON codec;
        # refused here, it fails where the message is made, not at a later write or export.
        # The common message (id and text, no metadata, media or tool calls) is one encode
        # per text field.
        fields = self.__dict__
        walk = bool(fields["metadata"])
        for name in self._part_fields:
            if fields[name]:
                walk = True
        if not walk:
            for name in self._text_fields:
                text = fields[name]
                # ASCII text (a flag CPython keeps, read in constant time) holds no surrogate;
                # only other text is encoded to look for one.
                if not text.isascii() and not _is_encodable(text):
                    break  # the walk below names the text
            else:
                return self
        strings = list(_strings(self))  # tool calls, media or metadata: walk them all
        try:
            "".join(strings).encode("utf-8")
        except UnicodeEncodeError:
            where = next(text for text in strings if not _is_encodable(text))
            raise ValueError(
                f"message text contains a lone surrogate (in {where[:40]!r}); "
                "surrogates are not valid in UTF-8"
            ) from None
        return self


def _is_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strings(message: _BaseMessage) -> Iterator[str]:
    """Every string a message holds: fields, tool calls, media, metadata keys and values."""
    # __dict__ rather than getattr: a missing attribute on a pydantic model is slow to miss.
    for name, value in message.__dict__.items():
        if isinstance(value, str):
            yield value
        elif isinstance(value, list) and name != "metadata":
            for part in value:
                yield from _strings_of_part(part)
        elif isinstance(value, dict) and name != "metadata":  # an event's payload
            yield from _json_strings(value)
    if message.metadata:
        yield from _json_strings(message.metadata)


def _json_strings(value: JsonValue) -> Iterator[str]:
    """Every string in a JSON value: keys and values, at any depth."""
    pending: list[JsonValue] = [value]
    while pending:  # a loop, not recursion: JSON may nest deeply
        value = pending.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            yield from value.keys()
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def _strings_of_part(part: BaseModel) -> Iterator[str]:
    for value in part.__dict__.values():
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):  # a reasoning part's details, a provider item's data
            yield from _json_strings(value)


class SystemMessage(_BaseMessage):
    """Instructions for the model. Memory keeps only the current one and sends it first."""

    type: Annotated[Literal[MessageType.SYSTEM], _TypeAsText] = MessageType.SYSTEM
    text: str
    """The instructions."""

    def __init__(self, text: str | None = None, /, **data: Any) -> None:
        if text is not None:
            data["text"] = text
        # Straight to the validator: BaseModel.__init__ would only repack the arguments.
        self.__pydantic_validator__.validate_python(data, self_instance=self)


class UserMessage(_BaseMessage):
    """What the user said, with optional media."""

    type: Annotated[Literal[MessageType.USER], _TypeAsText] = MessageType.USER
    text: str
    """The user's text."""
    media: list[Media] = Field(default_factory=list)
    """Attached images, audio or files."""

    def __init__(self, text: str | None = None, /, **data: Any) -> None:
        if text is not None:
            data["text"] = text
        # Straight to the validator: BaseModel.__init__ would only repack the arguments.
        self.__pydantic_validator__.validate_python(data, self_instance=self)


class AssistantMessage(_BaseMessage):
    """The model's answer: text, tool calls, or both."""

    type: Annotated[Literal[MessageType.ASSISTANT], _TypeAsText] = MessageType.ASSISTANT
    text: str = ""
    """The answer text; empty when the model only calls tools."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tools the model asked to run, answered by :class:`ToolResponseMessage`."""
    media: list[Media] = Field(default_factory=list)
    """Media produced by the model."""
    reasoning: list[ReasoningPart] = Field(default_factory=list, **_OMITTED_WHEN_EMPTY)
    """What the model thought before answering, to be sent back to the provider that
    produced it (see :class:`ReasoningPart`)."""
    provider_items: list[ProviderItem] = Field(default_factory=list, **_OMITTED_WHEN_EMPTY)
    """Provider-native items to be sent back verbatim to their provider."""
    usage: TokenUsage | None = Field(default=None, **_OMITTED_WHEN_EMPTY)
    """The tokens the call that produced this message used, if reported."""

    def __init__(self, text: str | None = None, /, **data: Any) -> None:
        if text is not None:
            data["text"] = text
        # Straight to the validator: BaseModel.__init__ would only repack the arguments.
        self.__pydantic_validator__.validate_python(data, self_instance=self)


class ToolResponseMessage(_BaseMessage):
    """Results of tool calls, matched to the assistant's calls by id."""

    type: Annotated[Literal[MessageType.TOOL], _TypeAsText] = MessageType.TOOL
    responses: list[ToolResponse]
    """One result per answered call."""

    @field_validator("responses")
    @classmethod
    def _not_empty(cls, value: list[ToolResponse]) -> list[ToolResponse]:
        if not value:
            raise ValueError("a tool response message needs at least one response")
        return value


EVENT_TYPE_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+$"
"""A namespaced event type: dot-separated names, at least two (``"acme.audit"``)."""

MAX_EVENT_TYPE_LENGTH = 200
"""The longest event type name accepted."""


class EventMessage(_BaseMessage):
    """An application's own event, kept in the conversation's log among its messages.

    Events are appended, ordered and made idempotent by ``id`` like messages, and read back
    by the history queries (``types=[MessageType.EVENT]``), but a memory never reads them
    into a window: they are never sent to a model, never folded into a summary and never
    evicted. Type names are namespaced (``"acme.audit"``); the ``chatmem`` namespace is
    used by chatmem's own session operations (forks and rewinds).

    Example:
        >>> from chatmem.messages import EventMessage
        >>> event = EventMessage("acme.audit", {"action": "refund", "amount": 20})
        >>> event.event_type, event.payload["action"]
        ('acme.audit', 'refund')

    Args:
        event_type: The namespaced type name.
        payload: The event's JSON object.
    """

    type: Annotated[Literal[MessageType.EVENT], _TypeAsText] = MessageType.EVENT
    event_type: str = Field(pattern=EVENT_TYPE_PATTERN, max_length=MAX_EVENT_TYPE_LENGTH)
    """The namespaced type name, such as ``"acme.audit"``."""
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    """The event's data: a JSON object, stored losslessly."""

    def __init__(
        self,
        event_type: str | None = None,
        payload: dict[str, JsonValue] | None = None,
        /,
        **data: Any,
    ) -> None:
        if event_type is not None:
            data["event_type"] = event_type
        if payload is not None:
            data["payload"] = payload
        # Straight to the validator: BaseModel.__init__ would only repack the arguments.
        self.__pydantic_validator__.validate_python(data, self_instance=self)


# The surrogate check walks a payload as it walks parts.
EventMessage._part_fields = ("payload",)


Message: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResponseMessage | EventMessage,
    Field(discriminator="type"),
]
"""Any chat message; ``type`` tells which."""

_MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)
_MESSAGE_CLASSES: frozenset[type[_BaseMessage]] = frozenset(
    {SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage, EventMessage}
)
_VERSION_SUFFIX = f',"v":{CODEC_VERSION}}}'
_VERSION_SUFFIX_BYTES = _VERSION_SUFFIX.encode()
_SUFFIX_LENGTH = len(_VERSION_SUFFIX)


def _function(function: Any) -> Any:
    return getattr(function, "__func__", function)  # a classmethod's function, unbound


# The Python validators that _stored_schema replaces, by what they check.
_REWRITES: dict[Any, str] = {
    _function(_BaseMessage._encodable): "surrogates",
    _function(_BaseMessage._non_empty_id): "id",
    _function(_BaseMessage._as_utc): "created_at",
    _function(ToolResponseMessage._not_empty): "responses",
}


# A creation time as encode_message writes it, in UTC with "Z", is read by
# datetime.fromisoformat (a C call), which gives it tzinfo UTC; the pattern keeps to the
# forms that pydantic's own parser reads alike. Any other form takes the general path.
_UTC_TIME_SCHEMA = core_schema.chain_schema(
    [
        core_schema.str_schema(
            strict=True,
            pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$",
        ),
        core_schema.no_info_plain_validator_function(datetime.fromisoformat),
    ]
)


def _stored_schema(node: Any, found: dict[str, int]) -> Any:
    """The message schema for JSON text, with the Python validators done in pydantic-core.

    Text parsed from JSON is valid Unicode (pydantic-core's parser refuses an escaped lone
    surrogate, and a ``str`` holding one cannot be parsed at all), so the surrogate check has
    nothing to find; a non-empty id and a non-empty list of tool results are length
    constraints; a creation time in UTC is read straight into UTC (_UTC_TIME_SCHEMA). A
    creation time with another offset or none is refused here, and decode_message's
    general path converts it exactly as construction does. Models are built without
    calling ``__init__``, which only takes the text positionally. Each rewrite is counted
    in ``found``.
    """
    if isinstance(node, list):
        return [_stored_schema(item, found) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "function-after":
        rewrite = _REWRITES.get(_function(node["function"]["function"]))
        if rewrite is not None:
            found[rewrite] += 1
            inner = _stored_schema(node["schema"], found)
            if rewrite == "surrogates":
                return inner
            if rewrite == "created_at":
                return _UTC_TIME_SCHEMA
            return {**inner, "min_length": 1}  # the id and the tool results
    rewritten = {key: _stored_schema(value, found) for key, value in node.items()}
    if rewritten.get("type") == "model" and rewritten.get("custom_init"):
        found["init"] += 1
        rewritten["custom_init"] = False
    return rewritten


def _stored_validator() -> SchemaValidator | None:
    """The validator of a stored message's JSON, or None if the schema is not as expected."""
    found = dict.fromkeys(("surrogates", "id", "created_at", "responses", "init"), 0)
    schema = _stored_schema(_MESSAGE_ADAPTER.core_schema, found)
    # Five message types, four with a positional __init__, one list of tool results. If a
    # pydantic release shapes its schemas differently, decoding keeps the full validators.
    if found != {"surrogates": 5, "id": 5, "created_at": 5, "responses": 1, "init": 4}:
        return None
    return SchemaValidator(cast(CoreSchema, schema))


_STORED = _stored_validator()
_STORED_ONE = _STORED if _STORED is not None else _MESSAGE_ADAPTER.validator

# Each message class's own JSON serializer, found by one dictionary lookup per message.
_TO_JSON: dict[type, Callable[[Any], bytes]] = {
    cls: cls.__pydantic_serializer__.to_json for cls in _MESSAGE_CLASSES
}


def encode_message(message: Message) -> str:
    """Encode a message as versioned JSON text.

    The output is compact JSON with a ``"v"`` field holding :data:`CODEC_VERSION`, so stored
    data can be migrated when the shape changes.

    Args:
        message: The message to encode.

    Returns:
        The JSON text.
    """
    # pydantic-core writes compact JSON with non-ASCII kept as UTF-8; the version goes last.
    # A message of one of the four types goes straight to its own serializer.
    to_json = _TO_JSON.get(message.__class__)
    encoded = to_json(message) if to_json is not None else _MESSAGE_ADAPTER.dump_json(message)
    return encoded[:-1].decode() + _VERSION_SUFFIX


def decode_message(data: str | bytes, *, conversation_id: str | None = None) -> Message:
    """Decode a message produced by :func:`encode_message`.

    Args:
        data: The stored JSON text.
        conversation_id: The conversation the record belongs to, named in errors.

    Returns:
        The message, equal to the one encoded. The same text read again (up to 4,096
        characters, among the 1,024 texts read most recently) gives the same message object:
        messages are immutable, so it is shared rather than decoded again.

    Raises:
        MessageDecodeError: If the record is not valid JSON, is nested too deeply, has an
            unknown codec version or does not describe a message. The message names the
            conversation.
    """
    # What encode_message wrote takes the fast path; anything it refuses takes the general
    # path, which explains what is wrong.
    kind = data.__class__
    if (kind is str or kind is bytes) and len(data) <= _REMEMBERED_RECORD_LENGTH:
        message = _decode_remembered(data)
    else:
        message = _decode_fast(data)
    if message is not None:
        return message
    return _decode_general(data, conversation_id)


_REMEMBERED_RECORD_LENGTH = 4096
"""Records up to this length (characters or bytes) are remembered decoded."""

_REMEMBERED_RECORDS = 1024
"""How many decoded records are remembered, the least recently read forgotten first."""


def _decode_fast(data: str | bytes) -> Message | None:
    """Decode what encode_message writes, in pydantic-core alone; None for anything else."""
    try:
        if isinstance(data, str):
            if data.endswith(_VERSION_SUFFIX):
                return cast(Message, _STORED_ONE.validate_json(data[:-_SUFFIX_LENGTH] + "}"))
        elif isinstance(data, bytes) and data.endswith(_VERSION_SUFFIX_BYTES):
            return cast(Message, _STORED_ONE.validate_json(data[:-_SUFFIX_LENGTH] + b"}"))
    except ValidationError:
        pass
    return None


# A memory reads the same records turn after turn (a window of 20 moves by two messages a
# turn), and the same text always decodes to the same message. Messages are immutable, so
# the one decoded object is handed to every reader of that text, as the in-memory
# repository hands out the objects it holds. Keyed by the exact stored text: a record that
# differs by one byte is decoded (and checked) anew. Bounded in count and record length:
# about ten megabytes at most (1,024 records of 4,096 characters and their messages), about
# two for 200-character messages; lru_cache is safe across threads.
_decode_remembered = lru_cache(maxsize=_REMEMBERED_RECORDS)(_decode_fast)


def decode_messages(
    data: Iterable[str | bytes], *, conversation_id: str | None = None
) -> list[Message]:
    """Decode many messages produced by :func:`encode_message`, in one call.

    The same as ``[decode_message(d, conversation_id=conversation_id) for d in data]``: each
    record is validated on its own (records are never joined into one JSON text, where a
    corrupt record could combine with its neighbour into valid messages).

    Args:
        data: The stored JSON texts (``str`` or UTF-8 ``bytes``).
        conversation_id: The conversation the records belong to, named in errors.

    Returns:
        The messages, in the order given.

    Raises:
        MessageDecodeError: If a record is not valid JSON, is nested too deeply, has an
            unknown codec version or does not describe a message. The message names the
            conversation.
    """
    return [decode_message(record, conversation_id=conversation_id) for record in data]


def _decode_general(data: str | bytes, conversation_id: str | None) -> Message:
    """Decode any stored record, or raise the MessageDecodeError that says what is wrong."""
    where = f" in conversation {conversation_id!r}" if conversation_id is not None else ""
    try:
        payload = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise MessageDecodeError(
            f"stored message{where} is not valid JSON: {exc}", conversation_id=conversation_id
        ) from exc
    except RecursionError:
        # A record nested deeper than the interpreter's stack (no message is) is corrupt or
        # hostile; the original error carries no information worth chaining.
        raise MessageDecodeError(
            f"stored message{where} is nested too deeply to be a message",
            conversation_id=conversation_id,
        ) from None
    if not isinstance(payload, dict):
        raise MessageDecodeError(
            f"stored message{where} is not a JSON object", conversation_id=conversation_id
        )
    version = payload.pop("v", None)
    if version != CODEC_VERSION:
        raise MessageDecodeError(
            f"stored message{where} has codec version {version!r}; "
            f"this chatmem reads version {CODEC_VERSION}",
            conversation_id=conversation_id,
        )
    try:
        return _MESSAGE_ADAPTER.validate_python(payload)
    except RecursionError:
        raise MessageDecodeError(
            f"stored message{where} is nested too deeply to be a message",
            conversation_id=conversation_id,
        ) from None
    except ValidationError as exc:
        raise MessageDecodeError(
            f"stored message{where} is not a valid message: "
            f"{exc.error_count()} error(s), first: {exc.errors()[0]['msg']}",
            conversation_id=conversation_id,
        ) from exc


def message_text(message: Message) -> str:
    """Return the plain text of a message (empty for tool responses and events).

    Args:
        message: Any message.
    """
    if isinstance(message, ToolResponseMessage | EventMessage):
        return ""
    return message.text


def searchable_text(message: Message) -> str:
    """Return the text that history queries search: text, tool calls and tool results.

    Every backend stores and searches this same text, so a search behaves alike everywhere.
    An event's searchable text is its type and its payload as JSON.

    Args:
        message: Any message.
    """
    if isinstance(message, EventMessage):
        payload = json.dumps(message.payload, ensure_ascii=False, separators=(",", ":"))
        return f"{message.event_type}\n{payload}"
    if isinstance(message, ToolResponseMessage):
        return "\n".join(r.response_data for r in message.responses)
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = "\n".join(f"{c.name} {c.arguments}" for c in message.tool_calls)
        return f"{message.text}\n{calls}" if message.text else calls
    return message.text

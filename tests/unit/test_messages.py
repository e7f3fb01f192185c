"""The message models and the versioned codec."""

from __future__ import annotations

import dataclasses
import json
import pickle
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from chatmem import (
    AssistantMessage,
    Media,
    MessageDecodeError,
    StoredMessage,
    SystemMessage,
    TokenUsage,
    ToolCall,
    UserMessage,
    _uuid7,
    decode_message,
    encode_message,
    messages,
)
from chatmem.exceptions import ChatModelHTTPError, RepositoryConnectionError
from chatmem.messages import CODEC_VERSION, decode_messages, searchable_text
from chatmem.testing import every_kind_of_message, reasoning_turns
from tests.support.interop_strategies import conversations
from tests.support.properties import property_settings


def test_every_kind_round_trips_exactly() -> None:
    for message in every_kind_of_message():
        encoded = encode_message(message)
        assert json.loads(encoded)["v"] == CODEC_VERSION
        assert json.loads(encoded)["type"] == message.type.value
        decoded = decode_message(encoded)
        assert decoded == message
        assert decoded.type is message.type  # the enum member, not its text
        assert message.model_dump()["type"] is message.type


def test_ids_are_uuid7_and_sort_by_creation() -> None:
    ids = [UserMessage("x").id for _ in range(1000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 1000
    assert all(i[14] == "7" for i in ids)


def test_ids_are_valid_uuid7_and_keep_order_when_the_counter_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A frozen clock: every id falls in one millisecond, so the 12-bit counter overflows
    # (4096 values) and the ids borrow the following milliseconds to stay in order.
    monkeypatch.setattr(_uuid7, "_time_ns", lambda: 1_900_000_000_000_000_000)
    ids = [_uuid7.uuid7() for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (7, uuid.RFC_4122, text)
    assert ids[-1][:13] > ids[0][:13]  # a later millisecond was borrowed


def test_created_at_is_utc() -> None:
    naive = UserMessage("x", created_at=datetime(2026, 1, 1, 12))
    assert naive.created_at.tzinfo is UTC
    plus_two = timezone(timedelta(hours=2))
    aware = UserMessage("x", created_at=datetime(2026, 1, 1, 12, tzinfo=plus_two))
    assert aware.created_at == datetime(2026, 1, 1, 10, tzinfo=UTC)


def test_tool_call_arguments_are_kept_as_given() -> None:
    raw = '{ "b":1,"a" : [1, 2.50] }'
    message = AssistantMessage(tool_calls=[ToolCall(id="1", name="f", arguments=raw)])
    decoded = decode_message(encode_message(message))
    assert isinstance(decoded, AssistantMessage)
    assert decoded.tool_calls[0].arguments == raw


def test_media_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Media(mime_type="image/png")
    with pytest.raises(ValueError, match="exactly one"):
        Media(mime_type="image/png", url="https://x", data=b"1")


def test_messages_are_immutable() -> None:
    message = UserMessage("x")
    with pytest.raises(ValueError, match="frozen"):
        message.text = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        "[1, 2]",
        '{"type": "user", "text": "no version"}',
        '{"v": 99, "type": "user", "text": "future"}',
        '{"v": 1, "type": "nonsense", "text": "x"}',
        '{"v": 1, "type": "user"}',
        b"\xff\xfe",
    ],
)
def test_corrupt_records_raise_decode_error_naming_conversation(stored: str | bytes) -> None:
    with pytest.raises(MessageDecodeError, match="conv-7") as caught:
        decode_message(stored, conversation_id="conv-7")
    assert caught.value.conversation_id == "conv-7"


def test_stored_messages_are_frozen_values() -> None:
    message = UserMessage("x")
    stored = StoredMessage(3, message)
    assert (stored.position, stored.message) == (3, message)
    assert stored == StoredMessage(position=3, message=message)
    assert pickle.loads(pickle.dumps(stored)) == stored
    assert dataclasses.replace(stored, position=4) == StoredMessage(4, message)
    assert repr(stored).startswith("StoredMessage(position=3, message=UserMessage(")
    with pytest.raises(dataclasses.FrozenInstanceError):
        stored.position = 5  # type: ignore[misc]


def test_errors_survive_pickling() -> None:
    error = ChatModelHTTPError("bad", status_code=429, body={"error": "slow down"})
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.status_code, copy.body, str(copy)) == (429, {"error": "slow down"}, "bad")
    down = pickle.loads(pickle.dumps(RepositoryConnectionError("down", backend="redis")))
    assert down.backend == "redis"


def test_searchable_text_covers_tool_calls_and_results() -> None:
    messages = every_kind_of_message()
    assert "lookup" in searchable_text(messages[2])
    assert "sunny" in searchable_text(messages[3])
    assert searchable_text(SystemMessage("s")) == "s"


@given(
    text=st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    metadata=st.dictionaries(
        st.text(max_size=10),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda children: (
                st.lists(children, max_size=3)
                | st.dictionaries(st.text(max_size=5), children, max_size=3)
            ),
            max_leaves=10,
        ),
        max_size=4,
    ),
)
def test_codec_round_trips_any_text_and_metadata(text: str, metadata: dict[str, object]) -> None:
    message = UserMessage(text, metadata=metadata)  # type: ignore[arg-type]
    assert decode_message(encode_message(message)) == message


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ('"2026-01-01T12:00:00Z"', datetime(2026, 1, 1, 12, tzinfo=UTC)),
        ('"2026-01-01T12:00:00.5Z"', datetime(2026, 1, 1, 12, 0, 0, 500_000, tzinfo=UTC)),
        ('"2026-01-01T12:00:00.123456Z"', datetime(2026, 1, 1, 12, 0, 0, 123_456, tzinfo=UTC)),
        ('"2026-01-01T12:00:00.1234567Z"', datetime(2026, 1, 1, 12, 0, 0, 123_456, tzinfo=UTC)),
        ('"9999-12-31T23:59:59.999999Z"', datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)),
        ('"2026-01-01T12:00:00+02:00"', datetime(2026, 1, 1, 10, tzinfo=UTC)),
        ('"2026-01-01T12:00:00"', datetime(2026, 1, 1, 12, tzinfo=UTC)),
        ('"2026-01-01 12:00Z"', datetime(2026, 1, 1, 12, tzinfo=UTC)),
        ("1767225600", datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_decoded_creation_times_are_utc(stored: str, expected: datetime) -> None:
    # encode_message writes UTC with "Z"; a record from elsewhere may carry an offset, none at
    # all, or another form pydantic reads.
    record = f'{{"type":"user","text":"x","created_at":{stored},"v":1}}'
    for data in (record, record.encode()):
        decoded = decode_message(data)
        assert decoded.created_at == expected
        assert decoded.created_at.tzinfo is UTC
    assert decode_message(encode_message(UserMessage("x"))).created_at.tzinfo is UTC


INVALID_TIMES = [
    "2026-02-29T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "20260101T120000Z",
    "٢٠٢٦-01-01T12:00:00Z",
]


@pytest.mark.parametrize("stored", INVALID_TIMES)
def test_invalid_stored_creation_times_are_decode_errors(stored: str) -> None:
    record = f'{{"type":"user","text":"x","created_at":"{stored}","v":1}}'
    with pytest.raises(MessageDecodeError, match="valid datetime"):
        decode_message(record, conversation_id="c")


@pytest.mark.parametrize(
    ("stored", "error"),
    [
        ('{"id":"","type":"user","text":"x","v":1}', "must not be empty"),
        ('{"type":"tool","responses":[],"v":1}', "at least one response"),
        ('{"type":"user","text":"x","extra":1,"v":1}', "Extra inputs"),
        ('{"type":"user","text":"x","v":2}', "codec version 2"),
        ('{"type":"user","text":"x","v":1,"v":2}', "codec version 2"),
        ('{"type":"user","text":"\\udc80","v":1}', "lone surrogate"),
        ('{"type":"user","text":"x","metadata":{"\\ud800":1},"v":1}', "lone surrogate"),
        ('{"type":"user","text":"a\udc80","v":1}', "lone surrogate"),
        (b'{"type":"user","text":"a\xff","v":1}', "not valid JSON"),
    ],
)
def test_invalid_stored_records_give_the_constructors_errors(
    stored: str | bytes, error: str
) -> None:
    # The first two are what constructing the message says; a lone surrogate, escaped in
    # the JSON text or raw in a str (as surrogateescape makes of invalid UTF-8), is refused.
    with pytest.raises(MessageDecodeError, match=error) as caught:
        decode_message(stored, conversation_id="conv-9")
    assert "conv-9" in str(caught.value)
    with pytest.raises(MessageDecodeError, match=error):
        decode_messages([encode_message(UserMessage("fine")), stored], conversation_id="conv-9")


def test_stored_records_are_checked_by_pydantic_core_alone() -> None:
    # Every Python validator of the models has its pydantic-core equivalent for stored JSON;
    # a pydantic release that shapes schemas differently makes decoding slower, not wrong.
    assert messages._STORED is not None


def test_decode_messages_equals_decoding_one_by_one() -> None:
    window = [*every_kind_of_message(), UserMessage("é 😀", metadata={"k": [1, {"a": None}]})]
    records = [encode_message(message) for message in window]
    assert decode_messages(records) == window
    assert decode_messages(iter(records)) == window
    assert decode_messages([record.encode() for record in records]) == window
    assert decode_messages([]) == []
    # A record the fast path cannot take (the version first) is still decoded.
    reordered = json.dumps({"v": 1, **json.loads(records[0])})
    assert decode_messages([reordered, *records]) == [window[0], *window]


def test_decode_messages_never_combines_corrupt_neighbours() -> None:
    # Joined into one JSON array, these two corrupt records would read as two valid messages.
    first = '{"type":"user","text":"a","metadata":{"k":"' + ',"v":1}'
    second = '"}},{"type":"user","text":"b"' + ',"v":1}'
    with pytest.raises(MessageDecodeError, match="not valid JSON"):
        decode_messages([first, second], conversation_id="c")


# Stored records near a message's shape: mostly valid messages of each type with the odd
# wrong value, and records with any field right or wrong.
_good_text = st.text(st.characters(codec="utf-8"), max_size=8)
_any_text = st.one_of(_good_text, _good_text, _good_text, st.sampled_from(["", "\ud800"]))
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _any_text,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_any_text, inner, max_size=2),
    max_leaves=4,
)
_times = st.sampled_from(
    [
        "2026-01-01T12:00:00Z",
        "2026-01-01T12:00:00.25Z",
        "2026-01-01T12:00:00.1234567Z",
        "2026-01-01T12:00:00+01:00",
        "2026-01-01T12:00:00",
        "2026-02-30T00:00:00Z",
        "x",
        1767225600,
        None,
    ]
)
_common = {
    "id": st.one_of(_good_text.filter(bool), _good_text.filter(bool), st.just(""), st.just(1)),
    "created_at": _times,
    "metadata": st.one_of(st.dictionaries(_any_text, _json_value, max_size=2), _json_value),
}
_media = st.sampled_from(
    [[], [{"mime_type": "a/b", "url": "u"}], [{"mime_type": "a/b"}],
     [{"mime_type": "a/b", "data": "aGk="}], [{"mime_type": "a/b", "data": "!"}]]
)  # fmt: skip
_calls = st.sampled_from([[], [{"id": "1", "name": "f", "arguments": "{}"}], [{}]])
_responses = st.sampled_from([[{"id": "1", "name": "f", "response_data": "r"}], [], [{}]])
_record_fields = st.one_of(
    st.fixed_dictionaries({"type": st.just("user"), "text": _any_text},
                          optional={**_common, "media": _media}),
    st.fixed_dictionaries({"type": st.just("assistant")},
                          optional={**_common, "text": _any_text, "tool_calls": _calls,
                                    "media": _media}),
    st.fixed_dictionaries({"type": st.just("system"), "text": _any_text}, optional=_common),
    st.fixed_dictionaries({"type": st.just("tool"), "responses": _responses}, optional=_common),
    st.fixed_dictionaries(
        {},
        optional={**_common, "type": st.sampled_from(["user", "tool", "USER", "other", 1]),
                  "text": _any_text | st.none(), "media": _media, "tool_calls": _calls,
                  "responses": _responses, "extra": st.just(1)},
    ),
)  # fmt: skip


@property_settings(400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(fields=_record_fields, ascii_only=st.booleans())
def test_the_fast_decoder_accepts_only_what_the_general_path_accepts_alike(
    fields: dict[str, object], ascii_only: bool
) -> None:
    # decode_message validates encode_message's records with pydantic-core alone and sends
    # anything it refuses down the general path (json.loads, then the models' validators).
    # Whatever the fast path accepts, the general path must accept as the same message.
    record = json.dumps(fields, ensure_ascii=ascii_only, separators=(",", ":"))[:-1]
    record = (record + "," if fields else record) + '"v":1}'
    try:
        general = messages._decode_general(record, None)
    except MessageDecodeError:
        general = None
    try:
        fast = decode_message(record)
    except MessageDecodeError:
        assert general is None
        return
    assert type(fast) is type(general)
    # A record without an id or a creation time gets new ones on each decode.
    fresh = {"id", "created_at"} - fields.keys()
    assert fast.model_dump(exclude=fresh) == general.model_dump(exclude=fresh)
    assert fast.created_at.tzinfo is UTC


@property_settings(100, deadline=None)
@given(conversation=conversations())
def test_conversations_decode_alike_on_both_paths(conversation: list[object]) -> None:
    for message in conversation:
        record = encode_message(message)  # type: ignore[arg-type]
        assert decode_message(record) == messages._decode_general(record, None) == message


def test_a_record_read_again_gives_the_message_decoded_before() -> None:
    # A memory reads the same records turn after turn; each is decoded once and the one
    # (immutable) message handed to every later reader of that exact text.
    record = encode_message(UserMessage("the same text, read every turn"))
    first = decode_message(record)
    assert decode_message("".join([record[:5], record[5:]])) is first  # a new str, same text
    assert decode_message(record.encode()) == first
    assert decode_messages([record, record]) == [first, first]
    # One character different is another record, decoded and checked anew.
    other = record.replace("every turn", "every tune")
    assert decode_message(other) is not first
    assert decode_message(other).text == "the same text, read every tune"  # type: ignore[union-attr]


def test_a_corrupt_record_fails_on_every_read() -> None:
    record = encode_message(UserMessage("fine"))
    corrupt = record.replace('"type":"user"', '"type":"usr"')
    for _ in range(3):
        with pytest.raises(MessageDecodeError, match="conv-3"):
            decode_message(corrupt, conversation_id="conv-3")
    assert decode_message(record).text == "fine"  # type: ignore[union-attr]


def test_long_records_are_decoded_every_time_and_not_remembered() -> None:
    # The decoded records remembered are bounded in count and in length, so a few long
    # tool results cannot hold memory: they are decoded on every read.
    long_text = "x" * (messages._REMEMBERED_RECORD_LENGTH + 1)
    record = encode_message(UserMessage(long_text))
    assert decode_message(record) == decode_message(record)
    assert decode_message(record) is not decode_message(record)
    before = messages._decode_remembered.cache_info().currsize
    for index in range(messages._REMEMBERED_RECORDS + 50):
        decode_message(encode_message(UserMessage(f"message {index}")))
    remembered = messages._decode_remembered.cache_info()
    assert before <= remembered.currsize == remembered.maxsize == messages._REMEMBERED_RECORDS


def test_every_message_encodes_as_its_class_serializes_it() -> None:
    # encode_message looks the serializer up by class; the text is the model's own JSON.
    for message in [*every_kind_of_message(), *reasoning_turns()]:
        own = message.__pydantic_serializer__.to_json(message).decode()
        assert encode_message(message) == own[:-1] + f',"v":{CODEC_VERSION}}}'


def test_a_message_subclass_encodes_as_its_base_message() -> None:
    class Answer(AssistantMessage):
        pass

    answer = Answer("hello", usage=TokenUsage(output_tokens=2))
    assert decode_message(encode_message(answer)) == AssistantMessage(
        "hello", id=answer.id, created_at=answer.created_at, usage=TokenUsage(output_tokens=2)
    )

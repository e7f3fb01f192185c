"""The message models and the versioned codec."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem import (
    AssistantMessage,
    Media,
    MessageDecodeError,
    SystemMessage,
    ToolCall,
    UserMessage,
    decode_message,
    encode_message,
)
from chatmem.exceptions import ChatModelHTTPError, RepositoryConnectionError
from chatmem.messages import CODEC_VERSION, searchable_text
from chatmem.testing import every_kind_of_message


def test_every_kind_round_trips_exactly() -> None:
    for message in every_kind_of_message():
        encoded = encode_message(message)
        assert json.loads(encoded)["v"] == CODEC_VERSION
        assert decode_message(encoded) == message


def test_ids_are_uuid7_and_sort_by_creation() -> None:
    ids = [UserMessage("x").id for _ in range(1000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 1000
    assert all(i[14] == "7" for i in ids)


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

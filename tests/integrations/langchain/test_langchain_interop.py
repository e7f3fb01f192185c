"""LangChain message conversion: exact round trips both ways."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from langchain_core import messages as lc
from langchain_core.load import dumpd

from chatmem import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage
from chatmem.interop import ConversionError, _langchain_convert
from chatmem.interop.langchain import STASH_KEY, from_langchain, to_langchain
from chatmem.testing import every_kind_of_message
from tests.support.interop_strategies import conversations
from tests.support.properties import property_settings


@property_settings(200, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_chatmem_to_langchain_and_back_is_the_identity(messages: list) -> None:
    # LangChain can hold every chatmem message: ids, times and metadata included.
    assert from_langchain(to_langchain(messages)) == messages


@property_settings(200, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_the_shortcuts_for_text_messages_convert_as_the_general_path_does(messages: list) -> None:
    # Text-only messages skip the general conversion both ways; what comes out is the same.
    native = [
        *to_langchain(messages),
        lc.HumanMessage("hi", id="h1"),
        lc.AIMessage("hello", id="a1"),
        lc.SystemMessage("be brief", id="s1"),
        lc.AIMessage("", id="a2", name="bot"),  # a field set: never a shortcut
    ]
    fast_out, fast_in = to_langchain(messages), from_langchain(native)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_langchain_convert, "_plain_piece", lambda message: None)
        patch.setattr(_langchain_convert, "_is_plain", lambda message, kwargs: False)
        general_out, general_in = to_langchain(messages), from_langchain(native)
    assert [dumpd(m) for m in fast_out] == [dumpd(m) for m in general_out]
    assert fast_out == general_out
    time = {"created_at"}  # the LangChain messages built here carry no time: each gets now
    assert [m.model_dump(exclude=time) for m in fast_in] == [
        m.model_dump(exclude=time) for m in general_in
    ]


def test_every_kind_of_message_round_trips() -> None:
    messages = every_kind_of_message()
    converted = to_langchain(messages)
    assert [m.type for m in converted] == ["system", "human", "ai", "tool", "tool", "ai", "human"]
    assert converted[2].tool_calls[0] == {  # type: ignore[attr-defined]
        "name": "lookup",
        "args": {"q": "a b", "n": 1.5},
        "id": "call_1",
        "type": "tool_call",
    }
    assert converted[1].content[1]["type"] == "image"  # type: ignore[index]
    assert from_langchain(converted) == messages


def native_conversation() -> list[lc.BaseMessage]:
    return [
        lc.SystemMessage("be brief", id="s1"),
        lc.HumanMessage("weather in Paris?", id="h1"),
        lc.AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}],
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
            usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
        ),
        lc.ToolMessage("sunny", tool_call_id="c1", artifact={"raw": [1, 2]}, status="error"),
        lc.AIMessage(
            [{"type": "reasoning", "reasoning": "easy"}, {"type": "text", "text": "Sunny."}],
            id="a2",
        ),
        lc.HumanMessage(
            [
                {"type": "text", "text": "and this?"},
                {"type": "image", "url": "https://example.com/x.png", "mime_type": "image/png"},
            ]
        ),
    ]


def test_langchain_to_chatmem_and_back_keeps_every_field() -> None:
    native = native_conversation()
    stored = from_langchain(native)
    assert [m.type for m in stored] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert stored[2].tool_calls == [  # type: ignore[union-attr]
        ToolCall(id="c1", name="weather", arguments='{"city": "Paris"}')
    ]
    assert stored[3].responses == [  # type: ignore[union-attr]
        ToolResponse(id="c1", name="weather", response_data="sunny")
    ]
    assert stored[4].text == "Sunny."  # type: ignore[union-attr]
    # What chatmem's fields cannot hold is kept as the original's JSON...
    assert STASH_KEY in stored[2].metadata
    assert STASH_KEY in stored[3].metadata
    assert STASH_KEY not in stored[1].metadata  # ...and nothing is kept when nothing is lost
    back = to_langchain(stored)
    for original, kept, again in zip(native, stored, back, strict=True):
        assert again.additional_kwargs.pop("chatmem")["id"] == kept.id
        assert again.id == (original.id or kept.id)  # LangChain gave no id: chatmem's
        assert again.model_dump(exclude={"id"}) == original.model_dump(exclude={"id"})


def test_stash_is_not_used_once_the_content_changed() -> None:
    (stored,) = from_langchain([lc.AIMessage("old", response_metadata={"model_name": "m"})])
    edited = stored.model_copy(update={"text": "new"})
    (again,) = to_langchain([edited])
    assert again.content == "new"


def test_multi_result_tool_messages_regroup_but_native_ones_stay_apart() -> None:
    call = AssistantMessage(
        tool_calls=[
            ToolCall(id="a", name="f", arguments="{}"),
            ToolCall(id="b", name="g", arguments="{}"),
        ]
    )
    both = ToolResponseMessage(
        responses=[
            ToolResponse(id="a", name="f", response_data="1"),
            ToolResponse(id="b", name="g", response_data="2"),
        ]
    )
    converted = to_langchain([call, both])
    assert [m.type for m in converted] == ["ai", "tool", "tool"]
    assert from_langchain(converted) == [call, both]
    native = [
        lc.AIMessage(
            "",
            tool_calls=[{"name": "f", "args": {}, "id": "a"}, {"name": "g", "args": {}, "id": "b"}],
        ),
        lc.ToolMessage("1", tool_call_id="a", name="f"),
        lc.ToolMessage("2", tool_call_id="b", name="g"),
    ]
    assert [m.type for m in from_langchain(native)] == ["assistant", "tool", "tool"]


def test_arguments_that_are_not_an_object_become_invalid_tool_calls() -> None:
    call = AssistantMessage(tool_calls=[ToolCall(id="a", name="f", arguments="{broken")])
    (converted,) = to_langchain([call])
    assert converted.invalid_tool_calls[0]["args"] == "{broken"  # type: ignore[attr-defined]
    assert from_langchain([converted]) == [call]


def test_what_chatmem_cannot_hold_is_an_error() -> None:
    with pytest.raises(ConversionError, match="function"):
        from_langchain([lc.FunctionMessage("x", name="f")])
    not_json = lc.ToolMessage("r", tool_call_id="c", name="f", artifact=object())
    with pytest.raises(ConversionError, match="not JSON"):
        from_langchain([not_json])
    (kept,) = from_langchain([not_json], lossy=True)
    assert kept.responses[0].response_data == "r"  # type: ignore[union-attr]

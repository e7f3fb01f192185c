"""LlamaIndex message conversion: round trips both ways and what it refuses."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given
from llama_index.core.base.llms import types as li

from chatmem import (
    AssistantMessage,
    Media,
    ReasoningPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.interop import ConversionError, _llama_index_convert
from chatmem.interop.llama_index import STASH_KEY, from_llama_index, to_llama_index
from tests.support.interop_strategies import content, conversations
from tests.support.properties import property_settings


@property_settings(200, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(with_metadata=False))
def test_round_trip_is_identity_or_refused(messages: list) -> None:
    try:
        converted = to_llama_index(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split(';')[0][:40]}")
        return
    event("converted")
    assert content(from_llama_index(converted)) == content(messages)


@property_settings(200, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(with_metadata=False))
def test_the_shortcut_for_text_messages_converts_as_the_general_path_does(messages: list) -> None:
    # Plain text messages skip the comparison with their converted form; nothing changes.
    native = [
        *to_llama_index(messages, lossy=True),
        li.ChatMessage(role="user", content="hi"),
        li.ChatMessage(role="assistant", content=""),
        li.ChatMessage(role="developer", content="be brief"),  # never a shortcut
        li.ChatMessage(role="user", content="hi", additional_kwargs={"k": 1}),  # nor this
    ]
    fast = from_llama_index(native, lossy=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_llama_index_convert, "_is_plain", lambda message: False)
        general = from_llama_index(native, lossy=True)
    time = {"id", "created_at"}  # LlamaIndex messages carry neither: each conversion makes them
    assert [m.model_dump(exclude=time) for m in fast] == [
        m.model_dump(exclude=time) for m in general
    ]


def test_metadata_and_media_names_are_refused_not_dropped() -> None:
    with pytest.raises(ConversionError, match="metadata"):
        to_llama_index([UserMessage("hi", metadata={"k": 1})])
    named = UserMessage("", media=[Media(mime_type="image/png", data=b"x", name="a.png")])
    with pytest.raises(ConversionError, match="name"):
        to_llama_index([named])
    (lossy,) = to_llama_index([named], lossy=True)
    assert isinstance(lossy.blocks[0], li.ImageBlock)


def test_tool_rounds_use_llama_index_shapes() -> None:
    call = AssistantMessage(tool_calls=[ToolCall(id="c1", name="f", arguments='{"a": 1}')])
    reply = ToolResponseMessage(responses=[ToolResponse(id="c1", name="f", response_data="ok")])
    assistant, tool = to_llama_index([call, reply])
    assert assistant.blocks == [
        li.ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"a": 1})
    ]
    assert tool.role == li.MessageRole.TOOL
    assert tool.additional_kwargs == {"tool_call_id": "c1"}
    assert content(from_llama_index([assistant, tool])) == content([call, reply])


def test_llama_index_to_chatmem_keeps_every_field() -> None:
    native = [
        li.ChatMessage(role="user", content="hi", additional_kwargs={"trace": "t1"}),
        li.ChatMessage(
            role="assistant",
            blocks=[li.ThinkingBlock(content="hmm"), li.TextBlock(text="Hello")],
        ),
        li.ChatMessage(role="assistant", content="plain"),
    ]
    stored = from_llama_index(native)
    assert [m.text for m in stored] == ["hi", "Hello", "plain"]  # type: ignore[union-attr]
    assert STASH_KEY in stored[0].metadata
    assert stored[1].reasoning == [ReasoningPart(text="hmm")]  # type: ignore[union-attr]
    assert stored[1].metadata == {}  # the thinking block is a reasoning part: nothing stashed
    assert stored[2].metadata == {}
    assert to_llama_index(stored) == native


def test_pdf_documents_keep_their_title() -> None:
    message = UserMessage(
        "read", media=[Media(mime_type="application/pdf", data=b"%PDF", name="a.pdf")]
    )
    (converted,) = to_llama_index([message])
    assert isinstance(converted.blocks[1], li.DocumentBlock)
    assert converted.blocks[1].title == "a.pdf"
    assert content(from_llama_index([converted])) == content([message])

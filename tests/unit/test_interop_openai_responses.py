"""The OpenAI Responses converter: round trips, order, the sending rule, refusals, SDK objects."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import strategies as st

from chatmem import (
    AssistantMessage,
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
from chatmem.interop import ConversionError
from chatmem.interop.openai_responses import METADATA_KEY, from_responses, to_responses
from tests.support.interop_strategies import (
    assistant_in_order,
    content,
    conversations,
    encrypted,
    openai_turn_parts,
    responses_conversations,
    text,
)
from tests.support.properties import property_settings

PROPERTY = property_settings(200, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(responses_conversations())
def test_round_trip_is_identity_or_refused(conversation: tuple[list[Message], str | None]) -> None:
    messages, model = conversation
    try:
        items = to_responses(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split(';')[0][:50]}")
        return
    event("converted")
    event(f"reasoning parts: {min(sum(len(getattr(m, 'reasoning', [])) for m in messages), 3)}")
    back = from_responses(items, model=model)
    assert content(back) == content(messages)
    assert to_responses(back) == items


@PROPERTY
@given(conversations(with_metadata=False))
def test_plain_conversations_round_trip_or_are_refused(messages: list[Message]) -> None:
    try:
        items = to_responses(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split(';')[0][:50]}")
        return
    event("converted")
    assert content(from_responses(items)) == content(messages)


@st.composite
def turns_with_foreign_parts(draw: st.DrawFn) -> tuple[AssistantMessage, AssistantMessage]:
    """One turn of OpenAI parts, and the same turn with Anthropic thinking mixed in."""
    parts: list[Any] = draw(openai_turn_parts(first_call=0, model="gpt-5.1"))
    mixed = list(parts)
    for number in range(draw(st.integers(1, 3))):
        thinking = ReasoningPart(
            text=draw(text), signature=draw(encrypted), provider="anthropic", id=f"th_{number}"
        )
        mixed.insert(draw(st.integers(0, len(mixed))), thinking)
    if draw(st.booleans()):
        foreign = ProviderItem(provider="anthropic", type="context_management", data={"a": 1})
        mixed.insert(draw(st.integers(0, len(mixed))), foreign)
    return assistant_in_order(parts), assistant_in_order(mixed)


@PROPERTY
@given(turns_with_foreign_parts())
def test_parts_of_another_provider_are_left_out(turns: tuple[AssistantMessage, ...]) -> None:
    own, mixed = turns
    question = UserMessage("What is the weather?")
    assert to_responses([question, mixed]) == to_responses([question, own])


@PROPERTY
@given(responses_conversations())
def test_without_item_ids_no_item_carries_an_id(
    conversation: tuple[list[Message], str | None],
) -> None:
    messages, _ = conversation
    try:
        items = to_responses(messages, item_ids=False)
    except ConversionError:
        return
    assert not [i for i in items if i["type"] != "compaction" and "id" in i]
    signatures = [p.signature for m in messages for p in getattr(m, "reasoning", [])]
    sent = [i.get("encrypted_content") for i in items if i["type"] == "reasoning"]
    assert sent == signatures


def test_interleaved_reasoning_and_calls_keep_their_order() -> None:
    first = ReasoningPart(text="Look it up.", signature="gAAA1", id="rs_1", provider="openai")
    second = ReasoningPart(text="", signature="gAAA2", id="rs_2", provider="openai")
    calls = [ToolCall(id=f"call_{n}", name="weather", arguments="{}") for n in (1, 2)]
    turn = assistant_in_order([first, calls[0], second, calls[1]])
    assert [p.index for p in turn.reasoning] == [0, 2]
    items = to_responses([UserMessage("Weather?"), turn])
    assert [(i["type"], i.get("id") or i.get("call_id")) for i in items[1:]] == [
        ("reasoning", "rs_1"),
        ("function_call", "call_1"),
        ("reasoning", "rs_2"),
        ("function_call", "call_2"),
    ]
    assert items[3] == {
        "type": "reasoning",
        "id": "rs_2",
        "summary": [],
        "encrypted_content": "gAAA2",
    }


def test_a_response_output_becomes_one_assistant_message() -> None:
    output = [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "First,"},
                {"type": "summary_text", "text": "then."},
            ],
            "encrypted_content": "gAAA",
        },
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "cmpdata"},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Calling.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city": "Paris"}',
            "status": "completed",
        },
    ]
    [message] = from_responses(output, model="gpt-5.1")
    assert isinstance(message, AssistantMessage)
    assert message.text == "Calling."
    [part] = message.reasoning
    assert (part.text, part.signature, part.id, part.provider, part.model, part.index) == (
        "First,\n\nthen.",
        "gAAA",
        "rs_1",
        "openai",
        "gpt-5.1",
        None,
    )
    assert part.details == {"summary": output[0]["summary"]}
    [item] = message.provider_items
    assert (item.provider, item.type, item.data) == ("openai", "compaction", output[1])
    assert message.metadata == {
        METADATA_KEY: {"message_id": "msg_1", "call_item_ids": {"call_1": "fc_1"}}
    }
    again = to_responses([message])
    assert again[0] == {k: v for k, v in output[0].items()}
    assert again[1] == output[1]
    assert again[3] == {k: v for k, v in output[3].items() if k != "status"}


def test_sdk_objects_are_read() -> None:
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary

    output = [
        ResponseReasoningItem(
            id="rs_9",
            type="reasoning",
            summary=[Summary(type="summary_text", text="Check the weather.")],
            encrypted_content="gAAAAB-opaque",
        ),
        ResponseFunctionToolCall(
            type="function_call", id="fc_9", call_id="call_9", name="weather", arguments="{}"
        ),
        ResponseOutputMessage(
            id="msg_9",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="Sunny.", annotations=[])],
        ),
    ]
    [message] = from_responses(output)
    assert isinstance(message, AssistantMessage)
    assert message.reasoning[0].signature == "gAAAAB-opaque"
    assert message.reasoning[0].text == "Check the weather."
    assert message.tool_calls == [ToolCall(id="call_9", name="weather", arguments="{}")]
    assert message.text == "Sunny."
    # The text came after the call: the reasoning part keeps place 0 and the text, which
    # the index rule puts before calls, goes back first.
    assert [i["type"] for i in to_responses([message])] == ["reasoning", "message", "function_call"]


def test_user_media_and_system_messages() -> None:
    image = Media(mime_type="image/png", data=b"\x89PNG")
    pdf = Media(mime_type="application/pdf", data=b"%PDF", name="report.pdf")
    messages = [SystemMessage("Be brief."), UserMessage("Look:", media=[image, pdf])]
    items = to_responses(messages)
    assert items[1]["content"] == [
        {"type": "input_text", "text": "Look:"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBERg==",
            "filename": "report.pdf",
        },
    ]
    assert content(from_responses(items)) == content(messages)
    developer = from_responses([{"role": "developer", "content": "Be kind."}])
    assert developer == [
        SystemMessage("Be kind.", id=developer[0].id, created_at=developer[0].created_at)
    ]


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ([UserMessage("Hi", metadata={"lang": "en"})], "message metadata"),
        ([AssistantMessage("a"), AssistantMessage("b")], "two assistant messages in a row"),
        (
            [
                AssistantMessage(
                    "", reasoning=[ReasoningPart(redacted=True, signature="x", provider="openai")]
                )
            ],
            "redacted reasoning",
        ),
        ([UserMessage("", media=[Media(mime_type="audio/wav", data=b"RIFF")])], "audio/wav media"),
        (
            [
                UserMessage(
                    "", media=[Media(mime_type="application/pdf", url="https://e.com/a.pdf")]
                )
            ],
            "by URL",
        ),
        (
            [
                ToolResponseMessage(
                    responses=[ToolResponse(id="call_1", name="x", response_data="")]
                )
            ],
            "without its call",
        ),
    ],
)
def test_what_the_items_cannot_hold_is_refused_unless_lossy(
    messages: list[Message], reason: str
) -> None:
    with pytest.raises(ConversionError, match=reason):
        to_responses(messages)
    to_responses(messages, lossy=True)


@pytest.mark.parametrize(
    ("items", "reason"),
    [
        (
            [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "a"}],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "b"}],
                },
            ],
            "several message items",
        ),
        (
            [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "no"}],
                }
            ],
            "'refusal' part",
        ),
        (
            [{"type": "function_call_output", "call_id": "call_1", "output": "x"}],
            "answers no earlier",
        ),
        ([{"role": "critic", "content": "x"}], "unknown OpenAI Responses message role"),
    ],
)
def test_what_chatmem_cannot_hold_is_refused(items: list[dict[str, Any]], reason: str) -> None:
    with pytest.raises(ConversionError, match=reason):
        from_responses(items)


def test_lossy_joins_several_message_items_of_one_turn() -> None:
    items = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "b"}]},
    ]
    [message] = from_responses(items, lossy=True)
    assert message.text == "ab"

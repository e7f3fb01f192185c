"""The Anthropic converter and reasoning models: thinking, redacted thinking, provider items
and their interleaved order, both ways without ``lossy``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import strategies as st

from chatmem import AssistantMessage, ProviderItem, ReasoningPart, TokenUsage, ToolCall
from chatmem.interop import ConversionError
from chatmem.interop._common import assistant_parts, parts_for_provider, parts_sent_to
from chatmem.interop.anthropic import from_anthropic, to_anthropic
from tests.support.interop_strategies import content, reasoning_answers, reasoning_conversations
from tests.support.properties import property_settings

PROPERTY = property_settings(200, suppress_health_check=[HealthCheck.too_slow])
MODEL = "claude-test"  # the model the strategies record on Anthropic parts


@PROPERTY
@given(reasoning_conversations())
def test_round_trip_with_reasoning_is_identity_or_refused(messages: list) -> None:
    try:
        payload = to_anthropic(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split(';')[0][:40]}")
        return
    kinds = {
        "interleaved" if any(p.index is not None for p in m.reasoning) else "thinking first"
        for m in messages
        if isinstance(m, AssistantMessage) and m.reasoning
    }
    event(f"converted: {sorted(kinds)}")
    assert content(from_anthropic(**payload, model=MODEL)) == content(messages)


@PROPERTY
@given(reasoning_answers(foreign="openai"))
def test_parts_of_another_provider_are_left_out_silently(pair: tuple) -> None:
    mixed, own = pair
    assert to_anthropic([mixed]) == to_anthropic([own])
    assert content(from_anthropic(**to_anthropic([mixed]), model=MODEL)) == content([own])


def test_interleaved_blocks_keep_their_order_and_signatures() -> None:
    blocks = [
        {"type": "thinking", "thinking": "Find the weather first.", "signature": "c2lnMQ=="},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Nice"}},
        {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        {"type": "tool_use", "id": "toolu_2", "name": "time", "input": {}},
    ]
    (message,) = from_anthropic([{"role": "assistant", "content": blocks}], model=MODEL)
    assert isinstance(message, AssistantMessage)
    assert [(p.text, p.signature, p.redacted, p.index) for p in message.reasoning] == [
        ("Find the weather first.", "c2lnMQ==", False, 0),
        ("", "ZW5jcnlwdGVk", True, 3),
    ]
    assert {(p.provider, p.model) for p in message.reasoning} == {("anthropic", MODEL)}
    assert [type(p).__name__ for p in assistant_parts(message)] == [
        "ReasoningPart",
        "str",
        "ToolCall",
        "ReasoningPart",
        "ToolCall",
    ]
    assert to_anthropic([message])["messages"][0]["content"] == blocks


def test_thinking_first_needs_no_index() -> None:
    blocks = [
        {"type": "thinking", "thinking": "Plan.", "signature": "c2ln"},
        {"type": "text", "text": "Done."},
    ]
    (message,) = from_anthropic([{"role": "assistant", "content": blocks}])
    assert isinstance(message, AssistantMessage)
    assert message.reasoning == [
        ReasoningPart(text="Plan.", signature="c2ln", provider="anthropic")
    ]


def test_other_blocks_become_provider_items_sent_back_verbatim() -> None:
    compaction = {"type": "compaction", "content": "Summary so far.", "extra": None}
    (message,) = from_anthropic(
        [{"role": "assistant", "content": [compaction, {"type": "text", "text": "Go on."}]}]
    )
    assert isinstance(message, AssistantMessage)
    assert message.provider_items == [
        ProviderItem(provider="anthropic", type="compaction", data=compaction)
    ]
    assert to_anthropic([message])["messages"][0]["content"][0] == compaction


def test_a_response_object_gives_usage_model_and_thinking() -> None:
    from anthropic.types import Message as SdkMessage

    response = SdkMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "Hmm.", "signature": "c2ln"},
                {"type": "text", "text": "Hi."},
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 5,
                "output_tokens": 7,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20,
            },
        }
    )
    (message,) = from_anthropic([response])
    assert isinstance(message, AssistantMessage)
    assert message.reasoning[0].model == "claude-sonnet-4-5"
    assert message.usage == TokenUsage(
        input_tokens=125, output_tokens=7, cache_read_tokens=100, cache_write_tokens=20
    )


def test_what_cannot_be_held_is_refused_not_dropped() -> None:
    call = ToolCall(id="t1", name="f", arguments="{}")
    with_id = AssistantMessage(
        "x", reasoning=[ReasoningPart(text="r", id="rs_1", provider="anthropic")]
    )
    with pytest.raises(ConversionError, match="id of a reasoning part"):
        to_anthropic([with_id])
    assert to_anthropic([with_id], lossy=True)["messages"][0]["content"][0] == {
        "type": "thinking",
        "thinking": "r",
    }
    redacted_text = ReasoningPart(text="t", signature="d", redacted=True, provider="anthropic")
    with pytest.raises(ConversionError, match="text of a redacted"):
        to_anthropic([AssistantMessage("x", reasoning=[redacted_text])])
    two_texts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    with pytest.raises(ConversionError, match="several text blocks"):
        from_anthropic([{"role": "assistant", "content": two_texts}])
    late_text = [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        {"type": "text", "text": "after"},
    ]
    with pytest.raises(ConversionError, match="text after a tool_use"):
        from_anthropic([{"role": "assistant", "content": late_text}])
    (lossy,) = from_anthropic([{"role": "assistant", "content": late_text}], lossy=True)
    assert isinstance(lossy, AssistantMessage)
    assert (lossy.text, lossy.tool_calls) == ("after", [call])
    with pytest.raises(ConversionError, match="thinking"):
        from_anthropic([{"role": "user", "content": [{"type": "thinking", "thinking": "."}]}])


def test_the_sending_rule_keeps_only_the_providers_parts() -> None:
    mine = ReasoningPart(text="a", signature="s", provider="anthropic")
    theirs = ReasoningPart(text="b", signature="e", provider="openai")
    unknown = ReasoningPart(text="c")
    item = ProviderItem(provider="openai", type="compaction", data={"type": "compaction"})
    message = AssistantMessage("answer", reasoning=[theirs, mine, unknown], provider_items=[item])
    assert parts_for_provider(message, "anthropic") == ([mine], [])
    assert parts_for_provider(message, "openai") == ([theirs], [item])
    assert parts_sent_to(message, "anthropic") == [mine, "answer"]
    assert to_anthropic([message])["messages"] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "a", "signature": "s"},
                {"type": "text", "text": "answer"},
            ],
        }
    ]


@PROPERTY
@given(
    st.lists(st.none() | st.integers(0, 8), max_size=4),
    st.lists(st.none() | st.integers(0, 8), max_size=2),
    st.booleans(),
    st.integers(0, 3),
)
def test_every_part_has_one_place_whatever_the_indexes(
    reasoning_at: list, items_at: list, has_text: bool, calls: int
) -> None:
    # Indexes past the end, taken twice or mixed with parts without one still give each part
    # exactly one place; text comes before the tool calls.
    message = AssistantMessage(
        "answer" if has_text else "",
        tool_calls=[ToolCall(id=f"t{n}", name="f", arguments="{}") for n in range(calls)],
        reasoning=[ReasoningPart(text=str(n), index=i) for n, i in enumerate(reasoning_at)],
        provider_items=[
            ProviderItem(provider="p", type="x", data={"n": n}, index=i)
            for n, i in enumerate(items_at)
        ],
    )
    parts = assistant_parts(message)
    assert len(parts) == len(reasoning_at) + len(items_at) + has_text + calls
    if None not in reasoning_at:  # indexed parts keep the order of their indexes
        in_order = sorted(message.reasoning, key=lambda p: p.index or 0)
        assert [p for p in parts if isinstance(p, ReasoningPart)] == in_order
    assert [p for p in parts if isinstance(p, ToolCall)] == message.tool_calls
    if has_text and calls:
        assert parts.index("answer") < parts.index(message.tool_calls[0])

"""Reasoning parts, provider items and usage through the framework converters.

Each framework holds them in its own first-class form (pydantic-ai's ``ThinkingPart``,
LangChain's ``reasoning`` blocks, LlamaIndex's ``ThinkingBlock``), so a conversation saved
through one continues through another with its reasoning.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given
from langchain_core import messages as lc
from llama_index.core.base.llms import types as li
from pydantic_ai import messages as pa

from chatmem import (
    AssistantMessage,
    InMemoryChatMemoryRepository,
    ProviderItem,
    ReasoningPart,
    TokenUsage,
    ToolCall,
    UserMessage,
)
from chatmem.interop import ConversionError
from chatmem.interop._common import assistant_parts
from chatmem.interop.langchain import from_langchain, to_langchain
from chatmem.interop.llama_index import from_llama_index, to_llama_index
from chatmem.interop.pydantic_ai import from_pydantic_ai, to_pydantic_ai
from chatmem_repositories import create_repository
from tests.support.interop_strategies import content, conversations
from tests.support.properties import property_settings

EXAMPLES = property_settings(200, suppress_health_check=[HealthCheck.too_slow], deadline=None)


def reasoning_of(messages: list) -> list[list[ReasoningPart]]:
    return [m.reasoning for m in messages if isinstance(m, AssistantMessage)]


def in_order(message: AssistantMessage) -> list[ReasoningPart]:
    return [p for p in assistant_parts(message) if isinstance(p, ReasoningPart)]


# -- round trips -----------------------------------------------------------------------------


@EXAMPLES
@given(conversations(with_reasoning=True))
def test_pydantic_ai_round_trip_keeps_reasoning_items_and_usage(messages: list) -> None:
    assert from_pydantic_ai(to_pydantic_ai(messages)) == messages


@EXAMPLES
@given(conversations(with_reasoning=True))
def test_reasoning_travels_as_pydantic_ai_thinking_parts(messages: list) -> None:
    for message, converted in zip(messages, to_pydantic_ai(messages), strict=True):
        if not isinstance(message, AssistantMessage):
            continue
        thinking = [p for p in converted.parts if isinstance(p, pa.ThinkingPart)]
        expected = in_order(message)
        assert [(t.content, t.signature, t.provider_name) for t in thinking] == [
            (p.text, p.signature, p.provider) for p in expected
        ]
        redacted = [t.id == "redacted_thinking" for t in thinking]
        assert redacted == [p.redacted for p in expected]


@EXAMPLES
@given(conversations(with_reasoning=True))
def test_langchain_round_trip_keeps_reasoning_items_and_usage(messages: list) -> None:
    assert from_langchain(to_langchain(messages)) == messages


@EXAMPLES
@given(conversations(with_reasoning=True))
def test_reasoning_travels_as_langchain_blocks(messages: list) -> None:
    for message in messages:
        if not isinstance(message, AssistantMessage) or not message.reasoning:
            continue
        (converted,) = to_langchain([message])
        assert isinstance(converted, lc.AIMessage)
        blocks = [
            b
            for b in converted.content
            if isinstance(b, dict)
            and (b["type"] == "reasoning" or b.get("value", {}).get("type") == "redacted_thinking")
        ]
        expected = in_order(message)
        assert len(blocks) == len(expected)
        for block, part in zip(blocks, expected, strict=True):
            if part.redacted:
                assert block["value"]["data"] == part.signature
            else:
                assert block["reasoning"] == part.text
                assert part.signature is None or part.signature in block["extras"].values()
        if converted.usage_metadata is not None:
            assert message.usage is not None
            assert converted.usage_metadata["input_tokens"] == message.usage.input_tokens


def without_items_and_usage(messages: list) -> list:
    return [
        m.model_copy(update={"provider_items": [], "usage": None})
        if isinstance(m, AssistantMessage)
        else m
        for m in messages
    ]


@EXAMPLES
@given(conversations(with_metadata=False, with_reasoning=True))
def test_llama_index_round_trip_is_identity_or_refused(messages: list) -> None:
    try:
        converted = to_llama_index(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split('(')[0][:40]}")
        return
    event("converted")
    assert content(from_llama_index(converted)) == content(messages)


@EXAMPLES
@given(conversations(with_metadata=False, with_reasoning=True).map(without_items_and_usage))
def test_reasoning_travels_as_llama_index_thinking_blocks(messages: list) -> None:
    try:
        converted = to_llama_index(messages)
    except ConversionError:  # media names and lone tool results, as without reasoning
        event("refused")
        return
    event("converted")
    assert reasoning_of(from_llama_index(converted)) == reasoning_of(messages)
    assistants = [m for m in messages if isinstance(m, AssistantMessage)]
    answers = [m for m in converted if m.role == li.MessageRole.ASSISTANT]
    for message, answer in zip(assistants, answers, strict=True):
        thinking = [b for b in answer.blocks if isinstance(b, li.ThinkingBlock)]
        expected = in_order(message)
        assert [(b.content, b.additional_information.get("signature")) for b in thinking] == [
            (p.text, p.signature) for p in expected
        ]


def test_llama_index_refuses_what_it_cannot_hold() -> None:
    item = ProviderItem(provider="openai", type="compaction", data={"type": "compaction"})
    for message in (
        AssistantMessage("x", provider_items=[item]),
        AssistantMessage("x", usage=TokenUsage()),
    ):
        with pytest.raises(ConversionError):
            to_llama_index([message])
        assert to_llama_index([message], lossy=True)[0].blocks == [li.TextBlock(text="x")]


# -- what the frameworks and their integrations give ------------------------------------------


def test_pydantic_ai_anthropic_turn_keeps_interleaved_thinking() -> None:
    response = pa.ModelResponse(
        [
            pa.ThinkingPart("look it up", signature="sig-1", provider_name="anthropic"),
            pa.TextPart("Checking."),
            pa.ToolCallPart("weather", '{"city": "Paris"}', tool_call_id="c1"),
            pa.ThinkingPart(
                "", id="redacted_thinking", signature="data", provider_name="anthropic"
            ),
            pa.ToolCallPart("weather", '{"city": "Rome"}', tool_call_id="c2"),
        ],
        model_name="claude-sonnet-4-5",
        usage=pa.RequestUsage(input_tokens=120, output_tokens=40, cache_read_tokens=100),
    )
    (stored,) = from_pydantic_ai([response])
    assert isinstance(stored, AssistantMessage)
    assert stored.reasoning == [
        ReasoningPart(
            text="look it up",
            signature="sig-1",
            provider="anthropic",
            model="claude-sonnet-4-5",
            index=0,
        ),
        ReasoningPart(
            signature="data",
            redacted=True,
            provider="anthropic",
            model="claude-sonnet-4-5",
            index=3,
        ),
    ]
    assert stored.usage == TokenUsage(input_tokens=120, output_tokens=40, cache_read_tokens=100)
    assert stored.metadata == {}  # nothing left for the stash
    (again,) = to_pydantic_ai([stored])
    assert again.parts == response.parts
    assert again.usage == response.usage


def test_pydantic_ai_openai_reasoning_keeps_id_and_encrypted_content() -> None:
    response = pa.ModelResponse(
        [
            pa.ThinkingPart(
                "summary",
                id="rs_1",
                signature="gAAA",
                provider_name="openai",
                provider_details={"raw_content": ["a"]},
            ),
            pa.ToolCallPart("f", "{}", tool_call_id="c1"),
        ],
        model_name="gpt-5",
    )
    (stored,) = from_pydantic_ai([response])
    assert stored.reasoning == [  # type: ignore[union-attr]
        ReasoningPart(
            text="summary",
            signature="gAAA",
            id="rs_1",
            provider="openai",
            model="gpt-5",
            details={"raw_content": ["a"]},
        )
    ]
    assert to_pydantic_ai([stored])[0].parts == response.parts


def test_langchain_anthropic_blocks_become_reasoning_parts() -> None:
    native = lc.AIMessage(
        [
            {"type": "thinking", "thinking": "look it up", "signature": "sig-1"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "redacted_thinking", "data": "data"},
        ],
        tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}],
        response_metadata={"model_provider": "anthropic", "model_name": "claude-sonnet-4-5"},
        usage_metadata={
            "input_tokens": 120,
            "output_tokens": 40,
            "total_tokens": 160,
            "input_token_details": {"cache_read": 100},
        },
    )
    (stored,) = from_langchain([native])
    assert isinstance(stored, AssistantMessage)
    model = "claude-sonnet-4-5"
    assert stored.reasoning == [
        ReasoningPart(
            text="look it up", signature="sig-1", provider="anthropic", model=model, index=0
        ),
        ReasoningPart(signature="data", redacted=True, provider="anthropic", model=model, index=3),
    ]
    assert stored.text == "Checking."
    assert stored.usage == TokenUsage(input_tokens=120, output_tokens=40, cache_read_tokens=100)
    # The integration's own form comes back to LangChain as it was.
    (again,) = to_langchain([stored])
    assert again.content == native.content


def test_langchain_openai_and_compatible_forms_become_reasoning_parts() -> None:
    responses = lc.AIMessage(
        [
            {
                "type": "reasoning",
                "id": "rs_1",
                "encrypted_content": "gAAA",
                "summary": [{"type": "summary_text", "text": "one"}],
            },
            {"type": "text", "text": "Done."},
        ],
        response_metadata={"model_provider": "openai", "model_name": "gpt-5"},
    )
    v1 = lc.AIMessage(
        [
            {
                "type": "reasoning",
                "reasoning": "two",
                "id": "rs_2",
                "extras": {"encrypted_content": "gBBB"},
            }
        ],
        response_metadata={"model_provider": "openai", "output_version": "v1"},
    )
    deepseek = lc.AIMessage("Hi.", additional_kwargs={"reasoning_content": "three"})
    stored = from_langchain([responses, v1, deepseek])
    assert [m.reasoning for m in stored] == [  # type: ignore[union-attr]
        [ReasoningPart(text="one", signature="gAAA", id="rs_1", provider="openai", model="gpt-5")],
        [ReasoningPart(text="two", signature="gBBB", id="rs_2", provider="openai")],
        [ReasoningPart(text="three")],
    ]
    assert [m.content for m in to_langchain(stored)] == [
        m.content for m in (responses, v1, deepseek)
    ]


def test_llama_index_thinking_blocks_become_reasoning_parts() -> None:
    native = li.ChatMessage(
        role="assistant",
        blocks=[
            li.ThinkingBlock(content="hmm", additional_information={"signature": "sig-1"}),
            li.TextBlock(text="Hello"),
        ],
    )
    (stored,) = from_llama_index([native])
    assert stored.reasoning == [ReasoningPart(text="hmm", signature="sig-1")]  # type: ignore[union-attr]
    assert stored.metadata == {}
    assert to_llama_index([stored]) == [native]


# -- one conversation, several frameworks -----------------------------------------------------


def anthropic_turn() -> list[pa.ModelMessage]:
    return [
        pa.ModelRequest([pa.UserPromptPart("Weather in Paris?")]),
        pa.ModelResponse(
            [
                pa.ThinkingPart("use the tool", signature="sig-1", provider_name="anthropic"),
                pa.ToolCallPart("weather", '{"city": "Paris"}', tool_call_id="c1"),
            ],
            model_name="claude-sonnet-4-5",
            provider_name="anthropic",
        ),
    ]


def test_saved_through_pydantic_ai_continues_through_langchain(tmp_path: Path) -> None:
    with create_repository(f"sqlite:///{tmp_path / 'chat.db'}") as repository:
        repository.save_all("007", from_pydantic_ai(anthropic_turn()))
        human, ai = to_langchain(repository.find_by_conversation_id("007"))
    assert isinstance(ai, lc.AIMessage)
    assert ai.response_metadata["model_provider"] == "anthropic"
    assert ai.response_metadata["output_version"] == "v1"
    assert ai.content[0] == {
        "type": "reasoning",
        "reasoning": "use the tool",
        "extras": {"signature": "sig-1"},
    }  # type: ignore[index]
    assert ai.tool_calls[0]["id"] == "c1"
    # ...and back through LlamaIndex, text and signature kept.
    (answer,) = [
        m for m in to_llama_index(from_langchain([human, ai]), lossy=True) if m.role == "assistant"
    ]
    assert isinstance(answer.blocks[0], li.ThinkingBlock)
    assert answer.blocks[0].content == "use the tool"
    assert answer.blocks[0].additional_information["signature"] == "sig-1"


def test_saved_through_langchain_continues_through_llama_index_and_pydantic_ai() -> None:
    repository = InMemoryChatMemoryRepository()
    native = [
        lc.HumanMessage("Weather in Paris?"),
        lc.AIMessage(
            [{"type": "thinking", "thinking": "use the tool", "signature": "sig-1"}],
            tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}],
            response_metadata={"model_provider": "anthropic"},
        ),
    ]
    repository.save_all("007", from_langchain(native))
    stored = repository.find_by_conversation_id("007")
    _, answer = to_llama_index(stored, lossy=True)  # LangChain's stash is metadata to LlamaIndex
    assert answer.blocks[0] == li.ThinkingBlock(
        content="use the tool",
        additional_information={"signature": "sig-1", "chatmem": {"provider": "anthropic"}},
    )
    _, response = to_pydantic_ai(stored)
    assert response.parts[0] == pa.ThinkingPart(
        "use the tool", signature="sig-1", provider_name="anthropic"
    )


def test_saved_through_llama_index_continues_through_pydantic_ai() -> None:
    native = [
        li.ChatMessage(role="user", content="hi"),
        li.ChatMessage(
            role="assistant",
            blocks=[
                li.ThinkingBlock(content="greet", additional_information={"signature": "s"}),
                li.TextBlock(text="Hello"),
            ],
        ),
    ]
    _, response = to_pydantic_ai(from_llama_index(native))
    assert response.parts == [pa.ThinkingPart("greet", signature="s"), pa.TextPart("Hello")]


# -- what earlier versions stored --------------------------------------------------------------


def test_old_stashes_still_give_the_framework_message_back() -> None:
    # Before reasoning parts, a thinking part lived only in the stash; the stored message has
    # no reasoning of its own, and reading it back still gives the thinking.
    (response,) = pa.ModelMessagesTypeAdapter.dump_python(
        [pa.ModelResponse([pa.ThinkingPart("hmm"), pa.TextPart("Hi")], model_name="m")], mode="json"
    )
    old_pa = AssistantMessage("Hi", metadata={"pydantic_ai": {**response, "metadata": None}})
    assert to_pydantic_ai([old_pa])[0].parts == [pa.ThinkingPart("hmm"), pa.TextPart("Hi")]

    native_lc = lc.AIMessage(
        [{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "Hi"}], id="a1"
    )
    old_lc = AssistantMessage("Hi", metadata={"langchain": lc.message_to_dict(native_lc)})
    assert to_langchain([old_lc])[0].content == native_lc.content

    native_li = li.ChatMessage(
        role="assistant", blocks=[li.ThinkingBlock(content="hmm"), li.TextBlock(text="Hi")]
    )
    old_li = AssistantMessage("Hi", metadata={"llama_index": native_li.model_dump(mode="json")})
    assert to_llama_index([old_li]) == [native_li]


def test_a_changed_reasoning_part_is_not_overridden_by_the_stash() -> None:
    (stored,) = from_pydantic_ai(
        [
            pa.ModelResponse(
                [pa.ThinkingPart("hmm", provider_name="x"), pa.TextPart("Hi")], run_id="r"
            )
        ]
    )
    assert "pydantic_ai" in stored.metadata
    edited = stored.model_copy(update={"reasoning": [ReasoningPart(text="other")]})
    assert to_pydantic_ai([edited])[0].parts[0] == pa.ThinkingPart("other")


def test_plain_messages_convert_as_before() -> None:
    messages = [
        UserMessage("hi"),
        AssistantMessage("hello", tool_calls=[ToolCall(id="c", name="f", arguments="{}")]),
    ]
    assert "response_metadata" not in to_langchain(messages)[1].model_dump(exclude_defaults=True)
    assert to_pydantic_ai(messages)[1].model_name is None

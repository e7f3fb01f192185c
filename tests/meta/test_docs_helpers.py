"""The helpers the docs show: exports from ``chatmem`` and ``ChatResponse.with_text``."""

from __future__ import annotations

import chatmem
from chatmem import (
    DEFAULT_CHAT_MEMORY_ORDER,
    HIGHEST_PRECEDENCE,
    LOWEST_PRECEDENCE,
    AssistantMessage,
    ChatResponse,
    Generation,
    TokenUsage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
)


def test_orders_are_exported_with_springs_values() -> None:
    assert (HIGHEST_PRECEDENCE, LOWEST_PRECEDENCE) == (-(2**31), 2**31 - 1)
    assert DEFAULT_CHAT_MEMORY_ORDER == HIGHEST_PRECEDENCE + 1000
    assert {"DEFAULT_CHAT_MEMORY_ORDER", "HIGHEST_PRECEDENCE", "LOWEST_PRECEDENCE"} <= set(
        chatmem.__all__
    )


def test_with_text_changes_the_answer_and_its_copy_in_the_exchange() -> None:
    call = AssistantMessage(tool_calls=[ToolCall(id="c1", name="weather", arguments="{}")])
    result = ToolResponseMessage(
        responses=[ToolResponse(id="c1", name="weather", response_data="sunny")]
    )
    answer = AssistantMessage("It is sunny.", metadata={"k": "v"})
    response = ChatResponse(
        [Generation(answer, "stop")],
        TokenUsage(input_tokens=1, output_tokens=2),
        "m",
        [call, result, answer],
        {"id": "x"},
    )
    changed = response.with_text("It is sunny in Paris.")
    assert changed.text == "It is sunny in Paris."
    assert changed.result is not None
    assert changed.result.message.id == answer.id
    assert changed.result.message.metadata == {"k": "v"}
    assert changed.finish_reason == "stop"
    assert changed.exchange[-1] == changed.result.message
    assert changed.exchange[:2] == [call, result]
    assert (changed.usage, changed.model, changed.metadata) == (
        TokenUsage(input_tokens=1, output_tokens=2),
        "m",
        {"id": "x"},
    )
    assert response.text == "It is sunny."  # the original is unchanged


def test_with_text_on_an_empty_response_adds_an_answer() -> None:
    assert ChatResponse().with_text("hello").text == "hello"

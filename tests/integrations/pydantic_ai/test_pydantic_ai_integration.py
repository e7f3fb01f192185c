"""pydantic-ai agents with chatmem history on every backend, sync and async."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai import messages as pa
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from chatmem import AsyncMessageWindowChatMemory, MessageWindowChatMemory
from chatmem.interop.pydantic_ai import (
    aload_history,
    asave_new_messages,
    from_pydantic_ai,
    load_history,
    save_new_messages,
    window_processor,
)
from tests.support import integration_backends
from tests.support.integration_backends import new_conversation_id

repository = integration_backends.repository
async_repository = integration_backends.async_repository
other_async_repository = integration_backends.other_async_repository


@pytest.fixture(autouse=True)
def close_run_sync_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Close the event loop ``run_sync`` leaves installed, so no loop outlives its test."""
    yield
    if inspect.iscoroutinefunction(request.function):
        return  # pytest-asyncio owns async tests' loops
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        policy.set_event_loop(None)


def weather(city: str) -> str:
    """Return the weather in a city."""
    return f"sunny in {city}"


def weather_agent(model: Any, *capabilities: Any) -> Agent[None, str]:
    return Agent(
        model, instructions="Answer briefly.", tools=[weather], capabilities=list(capabilities)
    )


def echo_history(messages: list[pa.ModelMessage], info: AgentInfo) -> pa.ModelResponse:
    """A model that calls the tool once per question, then answers with what it was sent."""
    last = messages[-1]
    if isinstance(last.parts[-1], pa.UserPromptPart):
        return pa.ModelResponse(
            [pa.ToolCallPart("weather", {"city": "Paris"}, f"call-{len(messages)}")]
        )
    prompts = [
        p.content
        for m in messages
        if isinstance(m, pa.ModelRequest)
        for p in m.parts
        if isinstance(p, pa.UserPromptPart)
    ]
    return pa.ModelResponse([pa.TextPart(" | ".join(map(str, prompts)))])


def test_agent_runs_on_chatmem_history(repository: Any) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=20)
    conversation = new_conversation_id()
    agent = weather_agent(FunctionModel(echo_history))
    for question in ("first?", "second?"):
        result = agent.run_sync(question, message_history=load_history(memory, conversation))
        save_new_messages(memory, conversation, result.new_messages())
    assert result.output == "first? | second?"  # the first turn came from chatmem
    stored = repository.find_by_conversation_id(conversation)
    assert [m.type for m in stored] == ["user", "assistant", "tool", "assistant"] * 2
    assert stored[2].responses[0].response_data == "sunny in Paris"


def test_window_never_splits_a_tool_call_from_its_return(repository: Any) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=6)
    conversation = new_conversation_id()
    agent = weather_agent(FunctionModel(echo_history))
    for turn in range(4):
        history = load_history(memory, conversation)
        calls = {p.tool_call_id for m in history for p in m.parts if isinstance(p, pa.ToolCallPart)}
        returns = {
            p.tool_call_id for m in history for p in m.parts if isinstance(p, pa.ToolReturnPart)
        }
        assert calls == returns
        result = agent.run_sync(f"question {turn}", message_history=history)
        save_new_messages(memory, conversation, result.new_messages())
    assert len(load_history(memory, conversation)) == 4  # one whole turn of 4 fits in 6
    assert len(repository.find_by_conversation_id(conversation)) == 16  # history kept


def test_test_model_run_is_stored_and_reloaded(repository: Any) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=20)
    conversation = new_conversation_id()
    result = weather_agent(TestModel()).run_sync("weather?")
    save_new_messages(memory, conversation, result.new_messages())
    reloaded = load_history(memory, conversation)
    # Every part comes back as pydantic-ai made it (usage and model name included).
    assert [m.parts for m in reloaded] == [m.parts for m in result.new_messages()]
    assert reloaded[1].usage == result.new_messages()[1].usage  # type: ignore[union-attr]


async def test_async_agent_runs_on_chatmem_history(async_repository: Any) -> None:
    memory = AsyncMessageWindowChatMemory(async_repository, max_messages=20)
    conversation = new_conversation_id()
    agent = weather_agent(FunctionModel(echo_history))
    for question in ("first?", "second?"):
        history = await aload_history(memory, conversation)
        result = await agent.run(question, message_history=history)
        await asave_new_messages(memory, conversation, result.new_messages())
    assert result.output == "first? | second?"
    stored = await async_repository.find_by_conversation_id(conversation)
    assert [m.type for m in stored] == ["user", "assistant", "tool", "assistant"] * 2


def test_window_processor_sends_only_whole_recent_turns() -> None:
    sent: list[list[pa.ModelMessage]] = []

    def model(messages: list[pa.ModelMessage], info: AgentInfo) -> pa.ModelResponse:
        sent.append(messages)
        return echo_history(messages, info)

    agent = weather_agent(FunctionModel(model))
    agent_with_window = weather_agent(FunctionModel(model), ProcessHistory(window_processor(5)))
    history: list[pa.ModelMessage] = []
    for turn in range(5):
        result = agent.run_sync(f"q{turn}", message_history=history)
        history = result.all_messages()
    sent.clear()
    result = agent_with_window.run_sync("last?", message_history=history)
    # Every model request saw at most 5 chatmem messages, starting at a user prompt, with
    # each tool call followed by its return.
    for messages in sent:
        assert len(from_pydantic_ai(messages)) <= 5
        first = messages[0].parts[0]
        assert isinstance(first, pa.UserPromptPart)
        calls = [
            p.tool_call_id for m in messages for p in m.parts if isinstance(p, pa.ToolCallPart)
        ]
        returns = [
            p.tool_call_id for m in messages for p in m.parts if isinstance(p, pa.ToolReturnPart)
        ]
        assert calls[: len(returns)] == returns
    assert result.output == "last?"
    # The run's new messages are still the new question and its answers, to be stored.
    new = [p.part_kind for m in result.new_messages() for p in m.parts]
    assert new == ["user-prompt", "tool-call", "tool-return", "text"]


async def test_other_backends(other_async_repository: Any) -> None:
    memory = AsyncMessageWindowChatMemory(other_async_repository, max_messages=20)
    conversation = new_conversation_id()
    agent = weather_agent(FunctionModel(echo_history))
    for question in ("first?", "second?"):
        history = await aload_history(memory, conversation)
        result = await agent.run(question, message_history=history)
        await asave_new_messages(memory, conversation, result.new_messages())
    assert result.output == "first? | second?"
    await memory.clear(conversation)

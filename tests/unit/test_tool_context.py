"""ToolContext: what a tool learns about the request that called it; the model cannot set it."""

from __future__ import annotations

import pytest

from chatmem import (
    CONVERSATION_ID,
    AssistantMessage,
    AsyncChatClient,
    ChatClient,
    MessageWindowChatMemory,
    ToolCall,
    ToolContext,
    ToolResponseMessage,
    tool,
)
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem_advisors import MessageChatMemoryAdvisor

SEEN: list[ToolContext] = []


@tool
def whoami(greeting: str, context: ToolContext) -> str:
    """Say which conversation this is.

    Args:
        greeting: Said first.
        context: Passed by the client.
    """
    SEEN.append(context)
    return f"{greeting} {context.conversation_id}"


def call(arguments: str, name: str = "whoami") -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id="c1", name=name, arguments=arguments)])


def tool_result(exchange: list[object]) -> str:
    results = exchange[1]
    assert isinstance(results, ToolResponseMessage)
    return results.responses[0].response_data


@pytest.fixture(autouse=True)
def forget() -> None:
    SEEN.clear()


def test_the_context_parameter_is_not_in_the_schema() -> None:
    assert whoami.context_parameter == "context"
    assert list(whoami.parameters["properties"]) == ["greeting"]  # type: ignore[arg-type]
    assert whoami.parameters["required"] == ["greeting"]


def test_the_client_passes_the_conversation_id_and_the_request_context() -> None:
    model = ScriptedChatModel([call('{"greeting": "hi"}'), "done"])
    client = ChatClient.create(model)
    response = (
        client.prompt("who?")
        .tools(whoami)
        .advisors({CONVERSATION_ID: "007", "tenant": "mi6"})
        .call()
        .chat_response()
    )
    assert tool_result(list(response.exchange)) == "hi 007"
    [context] = SEEN
    assert context.context["tenant"] == "mi6"
    with pytest.raises(TypeError):
        context.context["tenant"] = "kgb"  # type: ignore[index]


def test_a_streamed_request_passes_it_too() -> None:
    model = ScriptedChatModel([call('{"greeting": "hello"}'), "done"])
    client = ChatClient.builder(model).default_advisors({CONVERSATION_ID: "008"}).build()
    assert "".join(client.prompt("who?").tools(whoami).stream().content()) == "done"
    assert [c.conversation_id for c in SEEN] == ["008"]


def test_the_model_cannot_set_the_context() -> None:
    forged = '{"greeting": "hi", "context": {"conversation_id": "someone-else"}}'
    model = ScriptedChatModel([call(forged), "done"])
    client = ChatClient.create(model)
    response = client.prompt("who?").tools(whoami).advisors({CONVERSATION_ID: "007"}).call()
    assert tool_result(list(response.chat_response().exchange)).startswith("Error: ValidationError")
    assert SEEN == []


def test_the_context_is_the_one_the_advisors_handed_on() -> None:
    # The memory advisor validates the id and adds its own state; the tool sees both.
    model = ScriptedChatModel([call('{"greeting": "hi"}'), "done"])
    memory = MessageWindowChatMemory(max_messages=10)
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    client.prompt("who?").tools(whoami).advisors({CONVERSATION_ID: "007"}).call().content()
    [context] = SEEN
    assert context.conversation_id == "007"
    assert any(key.startswith("chatmem.memory_advisor.") for key in context.context)


def test_without_a_conversation_id_the_tool_gets_none() -> None:
    model = ScriptedChatModel([call('{"greeting": "hi"}'), "done"])
    ChatClient.create(model).prompt("who?").tools(whoami).call().content()
    assert SEEN[0].conversation_id is None
    assert SEEN[0].context == {}


def test_a_conversation_id_that_is_no_string_is_not_passed_as_one() -> None:
    model = ScriptedChatModel([call('{"greeting": "hi"}'), "done"])
    client = ChatClient.create(model)
    client.prompt("who?").tools(whoami).advisors({CONVERSATION_ID: 7}).call().content()
    assert SEEN[0].conversation_id is None
    assert SEEN[0].context[CONVERSATION_ID] == 7


def test_parsing_outside_a_client_gives_an_empty_context() -> None:
    arguments = whoami.parse_arguments('{"greeting": "hi"}')
    assert arguments == {"greeting": "hi", "context": ToolContext()}


def test_two_context_parameters_are_refused() -> None:
    def twice(a: ToolContext, b: ToolContext) -> str:
        return ""

    with pytest.raises(TypeError, match="only one parameter"):
        tool(twice)


async def test_the_async_client_passes_it_to_async_tools() -> None:
    @tool
    async def where(context: ToolContext) -> str:
        """Say which conversation this is."""
        return str(context.conversation_id)

    model = AsyncScriptedChatModel([call("{}", "where"), "done"])
    client = AsyncChatClient.create(model)
    spec = client.prompt("who?").tools(where).advisors({CONVERSATION_ID: "009"})
    response = await spec.call().chat_response()
    assert tool_result(list(response.exchange)) == "009"

"""A real OpenAI Agents SDK Runner with ChatmemSession on every backend.

The agent's model is the SDK's ``OpenAIResponsesModel`` over HTTP, against chatmem's test
server's ``/v1/responses`` (which checks every request as the API does: reasoning items
with encrypted content it issued, every function call answered), with a function tool.
Three turns, a pop, and a fourth turn that must not see the popped item.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from chatmem import AssistantMessage, ToolResponseMessage, UserMessage
from chatmem.interop.openai_agents import ChatmemSession
from chatmem.messages import CHAT_MESSAGE_TYPES
from chatmem.sessions import REWOUND_EVENT, AsyncSessions, rewound_message
from chatmem.testing import OpenAITestServer, ScriptedResponse
from chatmem.testing.responses_protocol import function_call_item, message_item, reasoning_item
from chatmem_repositories import create_async_repository
from tests.support.backends import SERVERS, backend_url
from tests.support.integration_backends import new_conversation_id

# Redis keys are written under this prefix, dropped after the module (redis_url fixtures).
PREFIX = f"chatmem-agents-{uuid.uuid4().hex[:8]}"
BACKENDS = ("memory", "sqlite", *SERVERS, "redis_cluster")
FORECASTS = {"Paris": "sunny, 21 C", "London": "rain, 14 C"}
RUN = RunConfig(tracing_disabled=True)  # no traces sent to OpenAI from a test


@function_tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return FORECASTS[city]


@pytest.fixture(params=BACKENDS)
async def repository(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    name = request.param
    if name == "redis_cluster":
        repo = create_async_repository(
            request.getfixturevalue("redis_cluster_url"), key_prefix=PREFIX
        )
    elif name == "redis":
        repo = create_async_repository(request.getfixturevalue("redis_url"), key_prefix=PREFIX)
    else:
        repo = create_async_repository(backend_url(name, tmp_path))
    try:
        yield repo
    finally:
        await repo.aclose()


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running
    assert running.rejected == [], "the server rejected a request as the real API would"


@pytest.fixture
async def agent(server: OpenAITestServer) -> AsyncIterator[Agent[Any]]:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    yield Agent(name="Forecaster", instructions="Answer briefly.", tools=[weather], model=model)
    await client.close()


def user(text: str) -> dict[str, Any]:
    return {"content": text, "role": "user"}  # what the SDK makes of a string input


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


async def test_three_turns_a_pop_and_a_fourth(
    repository: Any, server: OpenAITestServer, agent: Agent[Any]
) -> None:
    think_paris = reasoning_item("The user wants Paris.", "Call the tool.")
    call_paris = function_call_item("call_paris", "weather", '{"city": "Paris"}')
    think_answer = reasoning_item("Report it.")
    answer_paris = message_item("Sunny in Paris, 21 C.")
    call_london = function_call_item("call_london", "weather", '{"city": "London"}')
    answer_london = message_item("Rain in London, 14 C.")
    think_compare = reasoning_item()  # encrypted content only
    answer_compare = message_item("Paris was warmer.")
    answer_thanks = message_item("You're welcome.")
    server.reply_response(
        ScriptedResponse([think_paris, call_paris]),
        ScriptedResponse([think_answer, answer_paris]),
        ScriptedResponse([call_london]),
        ScriptedResponse([answer_london]),
        ScriptedResponse([think_compare, answer_compare]),
        ScriptedResponse([answer_thanks]),
    )
    session = ChatmemSession(new_conversation_id(), repository)

    first = await Runner.run(agent, "Weather in Paris?", session=session, run_config=RUN)
    assert first.final_output == "Sunny in Paris, 21 C."
    turn_one = [
        user("Weather in Paris?"),
        think_paris,
        call_paris,
        output("call_paris", "sunny, 21 C"),
        think_answer,
        answer_paris,
    ]
    assert await session.get_items() == turn_one

    second = await Runner.run(agent, "And London?", session=session, run_config=RUN)
    assert second.final_output == "Rain in London, 14 C."
    turn_two = [
        user("And London?"),
        call_london,
        output("call_london", "rain, 14 C"),
        answer_london,
    ]
    assert await session.get_items() == turn_one + turn_two

    third = await Runner.run(agent, "Which was warmer?", session=session, run_config=RUN)
    assert third.final_output == "Paris was warmer."
    turn_three = [user("Which was warmer?"), think_compare, answer_compare]
    everything = turn_one + turn_two + turn_three
    assert await session.get_items() == everything
    assert await session.get_items(3) == turn_three

    # What the model was sent: the session's items, then the round's new items.
    inputs = [request["input"] for request in server.responses_requests]
    assert inputs == [
        turn_one[:1],
        turn_one[:4],
        turn_one + turn_two[:1],
        turn_one + turn_two[:3],
        turn_one + turn_two + turn_three[:1],
    ]

    # Each item is one chatmem message of its kind.
    stored = await repository.find_history(
        session.session_id, types=sorted(CHAT_MESSAGE_TYPES), limit=100
    )
    messages = [s.message for s in stored]
    assert [type(m) for m in messages] == [
        UserMessage,
        AssistantMessage,
        AssistantMessage,
        ToolResponseMessage,
        AssistantMessage,
        AssistantMessage,
        UserMessage,
        AssistantMessage,
        ToolResponseMessage,
        AssistantMessage,
        UserMessage,
        AssistantMessage,
        AssistantMessage,
    ]
    assert messages[1].reasoning[0].signature == think_paris["encrypted_content"]  # type: ignore[union-attr]
    assert messages[2].tool_calls[0].name == "weather"  # type: ignore[union-attr]
    assert messages[3].responses[0].name == "weather"  # type: ignore[union-attr]
    assert messages[5].text == "Sunny in Paris, 21 C."  # type: ignore[union-attr]
    assert messages[11].reasoning[0].signature == think_compare["encrypted_content"]  # type: ignore[union-attr]

    # Pop the last answer: it leaves the session, and stays in history as rewound.
    assert await session.pop_item() == answer_compare
    assert await session.get_items() == everything[:-1]
    history = await AsyncSessions(repository).read_history(
        session.session_id, event_types=[REWOUND_EVENT]
    )
    rewound = [rewound_message(entry) for entry in history.entries]
    assert [r.message.id for r in rewound if r is not None] == [answer_compare["id"]]

    # A reasoning item cannot be sent without the item it led to (the API refuses it), so
    # the answer's reasoning goes too; the fourth turn sees neither.
    assert await session.pop_item() == think_compare
    fourth = await Runner.run(agent, "Thanks!", session=session, run_config=RUN)
    assert fourth.final_output == "You're welcome."
    sent = server.responses_requests[-1]["input"]
    assert sent == [*everything[:-2], user("Thanks!")]
    assert answer_compare not in sent
    assert await session.get_items() == [*everything[:-2], user("Thanks!"), answer_thanks]

    await session.clear_session()
    assert await session.get_items() == []
    assert await repository.find_version(session.session_id) == 0

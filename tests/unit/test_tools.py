"""The @tool decorator and the client's tool loop (sync+async)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Literal

import pytest
from pydantic import BaseModel

from chatmem import (
    AssistantMessage,
    AsyncChatClient,
    ChatClient,
    ConfigurationError,
    ToolCall,
    ToolIterationLimitError,
    ToolResponseMessage,
    tool,
)
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel


class Address(BaseModel):
    city: str
    zip_code: str | None = None


@tool
def weather(city: str, unit: Literal["C", "F"] = "C", days: int = 1) -> str:
    """Current weather in a city.

    More details that are not the description's first paragraph.

    Args:
        city: The city name,
            possibly with a country.
        unit: Temperature unit.
        days: How many days.

    Returns:
        A sentence.
    """
    return f"22 {unit} in {city} for {days} day(s)"


@tool(name="ship", description="Ship a parcel.")
def ship_parcel(address: Address, weight: float) -> dict[str, object]:
    return {"to": address.city, "cost": weight * 2}


def calls(*items: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in items])


def test_schema_from_hints_and_docstring() -> None:
    assert weather.name == "weather"
    assert weather.description.startswith("Current weather in a city.")
    props = weather.parameters["properties"]
    assert isinstance(props, dict)
    assert props["city"] == {
        "description": "The city name, possibly with a country.",
        "title": "City",
        "type": "string",
    }
    assert props["unit"]["enum"] == ["C", "F"]  # type: ignore[index, call-overload]
    assert weather.parameters["required"] == ["city"]
    assert weather("Paris") == "22 C in Paris for 1 day(s)"
    assert ship_parcel.name == "ship"
    assert ship_parcel.description == "Ship a parcel."
    assert "$defs" in ship_parcel.parameters
    assert ship_parcel.parse_arguments('{"address": {"city": "Rome"}, "weight": 2}') == {
        "address": Address(city="Rome"),
        "weight": 2.0,
    }


def test_tool_rejects_var_args() -> None:
    with pytest.raises(TypeError):

        @tool
        def bad(*args: int) -> None:
            pass


def test_tool_loop_runs_tools_and_reports_errors_to_the_model() -> None:
    model = ScriptedChatModel(
        [
            calls(
                ("1", "weather", '{"city": "Paris", "unit": "F"}'),
                ("2", "weather", '{"unit": "K"}'),
                ("3", "nope", "{}"),
                ("4", "ship", '{"address": {"city": "Rome"}, "weight": 1.5}'),
            ),
            "done",
        ]
    )
    response = ChatClient.create(model).prompt("go").tools(weather, ship_parcel).call()
    exchange = list(response.chat_response().exchange)
    results = exchange[1]
    assert isinstance(results, ToolResponseMessage)
    data = {r.id: r.response_data for r in results.responses}
    assert data["1"] == "22 F in Paris for 1 day(s)"
    assert data["2"].startswith("Error: ValidationError")
    assert data["3"] == "Error: LookupError: no tool named 'nope'"
    assert json.loads(data["4"]) == {"to": "Rome", "cost": 3.0}
    # The second model call saw the tool round.
    assert [m.type.value for m in model.prompts[1].messages] == ["user", "assistant", "tool"]
    tools_sent = [t.name for t in model.prompts[0].tools]
    assert tools_sent == ["weather", "ship"]


def test_raising_tool_and_custom_error_handler() -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    model = ScriptedChatModel([calls(("1", "explode", "")), "sorry"])
    client = (
        ChatClient.builder(model)
        .default_tools(explode)
        .tool_error_handler(lambda call, exc: f"{call.name} failed")
        .build()
    )
    exchange = client.prompt("go").call().chat_response().exchange
    assert isinstance(exchange[1], ToolResponseMessage)
    assert exchange[1].responses[0].response_data == "explode failed"

    def strict(call: ToolCall, exc: Exception) -> str:
        raise exc

    model.add_replies(calls(("2", "explode", "")))
    strict_client = ChatClient.builder(model).default_tools(explode).tool_error_handler(strict)
    with pytest.raises(RuntimeError, match="kaboom"):
        strict_client.build().prompt("go").call().content()


def test_iteration_bound() -> None:
    model = ScriptedChatModel(respond=lambda prompt: calls(("x", "weather", '{"city": "A"}')))
    client = ChatClient.builder(model).default_tools(weather).max_tool_iterations(3).build()
    with pytest.raises(ToolIterationLimitError, match="3 rounds"):
        client.prompt("loop").call().content()
    assert len(model.prompts) == 4
    with pytest.raises(ToolIterationLimitError):
        list(client.prompt("loop").stream().content())


def test_async_tool_in_sync_client_is_a_configuration_error() -> None:
    @tool
    async def fetch() -> str:
        """Fetch."""
        return "x"

    client = ChatClient.create(ScriptedChatModel(["never"]))
    with pytest.raises(ConfigurationError, match="async"):
        client.prompt("go").tools(fetch).call().content()


async def test_async_client_runs_async_tools_and_offloads_sync_ones() -> None:
    seen_threads: list[int] = []

    @tool
    async def fetch(key: str) -> str:
        """Fetch a value."""
        await asyncio.sleep(0)
        return key.upper()

    @tool
    def blocking(key: str) -> str:
        """A sync tool: runs in a worker thread, not on the event loop."""
        seen_threads.append(threading.get_ident())
        return key * 2

    model = AsyncScriptedChatModel(
        [calls(("1", "fetch", '{"key": "a"}'), ("2", "blocking", '{"key": "b"}')), "ok"]
    )
    client = AsyncChatClient.builder(model).default_tools(fetch, blocking).build()
    response = await client.prompt("go").call().chat_response()
    results = response.exchange[1]
    assert isinstance(results, ToolResponseMessage)
    assert [r.response_data for r in results.responses] == ["A", "bb"]
    assert seen_threads
    assert seen_threads[0] != threading.get_ident()

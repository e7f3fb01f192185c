"""pydantic-ai message conversion: exact round trips both ways."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given
from pydantic_ai import Agent
from pydantic_ai import messages as pa
from pydantic_ai.models.test import TestModel

from chatmem import AssistantMessage, Media, ToolCall, ToolResponse, UserMessage
from chatmem.interop import ConversionError, _pydantic_ai_convert
from chatmem.interop.pydantic_ai import STASH_KEY, from_pydantic_ai, to_pydantic_ai
from chatmem.testing import every_kind_of_message
from tests.support.interop_strategies import conversations
from tests.support.properties import property_settings


def no_assistant_media(messages: list) -> list:
    return [
        m.model_copy(update={"media": []}) if isinstance(m, AssistantMessage) else m
        for m in messages
    ]


@property_settings(200, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_chatmem_to_pydantic_ai_and_back_is_the_identity(messages: list) -> None:
    assert from_pydantic_ai(to_pydantic_ai(messages)) == messages


def test_every_kind_of_message_round_trips() -> None:
    messages = every_kind_of_message()
    converted = to_pydantic_ai(messages)
    assert [m.kind for m in converted] == ["request"] * 2 + [
        "response",
        "request",
        "response",
        "request",
    ]
    call = converted[2].parts[0]
    assert isinstance(call, pa.ToolCallPart)
    assert call.args == '{"q": "a b",  "n": 1.50}'  # the exact text
    assert from_pydantic_ai(converted) == messages


def native_run() -> list[pa.ModelMessage]:
    return [
        pa.ModelRequest(
            [pa.SystemPromptPart("be brief"), pa.UserPromptPart("weather in Paris?")],
            run_id="r1",
        ),
        pa.ModelResponse(
            [pa.ThinkingPart("easy"), pa.ToolCallPart("weather", {"city": "Paris"}, "c1")],
            usage=pa.RequestUsage(input_tokens=3, output_tokens=2),
            model_name="m",
        ),
        pa.ModelRequest([pa.ToolReturnPart("weather", {"sky": "clear"}, "c1")]),
        pa.ModelResponse([pa.TextPart("Sunny.")], model_name="m"),
        pa.ModelRequest([pa.RetryFeedbackPart("try again", retry=pa.RetryInfo(cause="no_output"))]),
    ]


def test_pydantic_ai_to_chatmem_keeps_every_part() -> None:
    native = native_run()
    stored = from_pydantic_ai(native)
    assert [m.type for m in stored] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert stored[2].tool_calls == [  # type: ignore[union-attr]
        ToolCall(id="c1", name="weather", arguments='{"city": "Paris"}')
    ]
    assert stored[3].responses == [  # type: ignore[union-attr]
        ToolResponse(id="c1", name="weather", response_data='{"sky":"clear"}')
    ]
    assert STASH_KEY in stored[2].metadata  # thinking and usage are kept
    back = to_pydantic_ai(stored)
    # The first request comes back as two (system, user), which pydantic-ai merges.
    merged = [pa.ModelRequest([*back[0].parts, *back[1].parts]), *back[2:]]
    for original, again in zip(native, merged, strict=True):
        assert [p for p in again.parts] == list(original.parts)
    assert back[2].usage == native[1].usage  # type: ignore[union-attr]


def test_messages_an_agent_run_gives_are_kept_whole_without_comparing() -> None:
    # An agent run sets a run id, model name and usage, which chatmem keeps beside its fields
    # whatever the comparison would say; skipping it changes nothing.
    agent = Agent(TestModel())

    @agent.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    # asyncio.run closes its loop; run_sync would leave one installed for a later test's GC.
    run = asyncio.run(agent.run("Weather in Paris?")).all_messages()
    native = [*native_run(), *run, *to_pydantic_ai(every_kind_of_message())]
    fast = from_pydantic_ai(native)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_pydantic_ai_convert, "_kept_anyway", lambda message: False)
        compared = from_pydantic_ai(native)
    made_here = {"id"}  # messages without chatmem's envelope get a new id each time
    assert [m.model_dump(exclude=made_here) for m in fast] == [
        m.model_dump(exclude=made_here) for m in compared
    ]
    stored = from_pydantic_ai(run)
    assert all(STASH_KEY in m.metadata for m in stored)
    # ...and they come back as they were (chatmem's envelope aside).
    dump = pa.ModelMessagesTypeAdapter.dump_python
    assert [{**d, "metadata": None} for d in dump(to_pydantic_ai(stored), mode="json")] == [
        {**d, "metadata": None} for d in dump(run, mode="json")
    ]


def test_assistant_media_is_an_error() -> None:
    message = AssistantMessage("x", media=[Media(mime_type="image/png", data=b"x")])
    with pytest.raises(ConversionError, match="media"):
        to_pydantic_ai([message])
    assert to_pydantic_ai([message], lossy=True)[0].parts == [pa.TextPart("x")]


def test_media_names_survive() -> None:
    message = UserMessage(
        "see", media=[Media(mime_type="application/pdf", data=b"%PDF", name="a.pdf")]
    )
    (converted,) = to_pydantic_ai([message])
    assert isinstance(converted.parts[0], pa.UserPromptPart)
    assert converted.parts[0].content[1] == pa.BinaryContent(b"%PDF", media_type="application/pdf")  # type: ignore[index]
    assert from_pydantic_ai([converted]) == [message]

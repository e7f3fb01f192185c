"""The OpenAI and Anthropic dict converters: round trips, refusals and SDK objects."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, event, given

from chatmem import (
    AssistantMessage,
    Media,
    SystemMessage,
    TokenUsage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.interop import ConversionError
from chatmem.interop.anthropic import from_anthropic, to_anthropic
from chatmem.interop.openai import from_openai, to_openai
from chatmem.testing import every_kind_of_message
from tests.support.interop_strategies import content, conversations
from tests.support.properties import property_settings

PROPERTY = property_settings(200, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(conversations(with_metadata=False))
def test_openai_round_trip_is_identity_or_refused(messages: list) -> None:
    try:
        payload = to_openai(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split(';')[0][:40]}")
        return
    event("converted")
    assert content(from_openai(payload)) == content(messages)


@PROPERTY
@given(conversations(with_metadata=False))
def test_anthropic_round_trip_is_identity_or_refused(messages: list) -> None:
    try:
        payload = to_anthropic(messages)
    except ConversionError as exc:
        event(f"refused: {str(exc).split(';')[0][:40]}")
        return
    event("converted")
    assert content(from_anthropic(**payload)) == content(messages)


@PROPERTY
@given(conversations(with_metadata=False))
def test_lossy_openai_keeps_text_and_tool_calls(messages: list) -> None:
    back = from_openai(to_openai(messages, lossy=True), lossy=True)
    assert [(m.type, getattr(m, "text", "")) for m in back if m.type != "tool"] == [
        (m.type, getattr(m, "text", "")) for m in messages if m.type != "tool"
    ]


def test_metadata_is_refused_not_dropped() -> None:
    with pytest.raises(ConversionError, match="metadata"):
        to_openai([UserMessage("hi", metadata={"k": 1})])
    with pytest.raises(ConversionError, match="metadata"):
        to_anthropic([UserMessage("hi", metadata={"k": 1})])
    assert to_openai([UserMessage("hi", metadata={"k": 1})], lossy=True) == [
        {"role": "user", "content": "hi"}
    ]


def test_what_each_dict_format_refuses() -> None:
    call = AssistantMessage(tool_calls=[ToolCall(id="c1", name="f", arguments='{"a":1}')])
    reply = ToolResponseMessage(responses=[ToolResponse(id="c1", name="f", response_data="ok")])
    renamed = ToolResponseMessage(responses=[ToolResponse(id="c1", name="g", response_data="x")])
    named_image = UserMessage("", media=[Media(mime_type="image/png", data=b"x", name="a.png")])
    # Anthropic holds arguments as an object: only json.dumps formatting survives.
    with pytest.raises(ConversionError, match="formatting"):
        to_anthropic([call, reply])
    # Tool results carry no name: one that differs from its call's cannot be kept.
    with pytest.raises(ConversionError, match="name"):
        to_openai([call, renamed])
    # Two tool messages in a row would come back as one.
    with pytest.raises(ConversionError, match="in a row"):
        to_openai([call, reply, reply])
    with pytest.raises(ConversionError, match="name of an image"):
        to_openai([named_image])
    with pytest.raises(ConversionError, match="system message after"):
        to_anthropic([UserMessage("a"), SystemMessage("late")])
    with pytest.raises(ConversionError, match="audio/wav"):
        to_anthropic([UserMessage("", media=[Media(mime_type="audio/wav", data=b"x")])])
    with pytest.raises(ConversionError, match="answers no earlier"):
        from_openai([{"role": "tool", "tool_call_id": "zz", "content": "x"}])
    with pytest.raises(ConversionError, match="thinking"):
        from_anthropic([{"role": "user", "content": [{"type": "thinking", "thinking": "."}]}])


def test_sample_conversation_round_trips_where_each_format_can() -> None:
    messages = [m.model_copy(update={"metadata": {}}) for m in every_kind_of_message()]
    # The sample's arguments are not json.dumps text and its PNG has a name: lossy it goes.
    back = from_openai(to_openai(messages, lossy=True))
    assert [m.type for m in back] == [m.type for m in messages]
    assert back[2].tool_calls == messages[2].tool_calls  # type: ignore[union-attr]
    assert back[3].responses == messages[3].responses  # type: ignore[union-attr]
    payload = to_anthropic(messages, lossy=True)
    assert payload["system"] == messages[0].text  # type: ignore[union-attr]
    assert from_anthropic(**payload)[3].responses == messages[3].responses  # type: ignore[union-attr]


def test_anthropic_sdk_objects_are_read() -> None:
    from anthropic.types import Message as SdkMessage

    response = SdkMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "ü"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    (message,) = from_anthropic([response])
    assert message == AssistantMessage(
        "Let me look.",
        tool_calls=[ToolCall(id="tu_1", name="search", arguments='{"q": "ü"}')],
        usage=TokenUsage(input_tokens=1, output_tokens=1),
        id=message.id,
        created_at=message.created_at,
    )


def test_importing_chatmem_and_interop_imports_no_framework() -> None:
    code = (
        "import sys, chatmem, chatmem.interop, chatmem.interop.openai, chatmem.interop.anthropic\n"
        "bad = [m for m in ('langchain_core', 'pydantic_ai', 'llama_index', 'anthropic', 'openai')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("module", "package", "extra"),
    [
        ("langchain", "langchain_core", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("llama_index", "llama_index.core", "llama-index"),
    ],
)
def test_a_missing_framework_names_the_install_line(module: str, package: str, extra: str) -> None:
    # sys.modules[name] = None makes importing that package fail, as if it were not installed.
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "try:\n"
        f"    import chatmem.interop.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert f'pip install "chatmem[{extra}]"' in out.stdout

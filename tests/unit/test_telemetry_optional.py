"""OpenTelemetry is optional: without the API chatmem runs uninstrumented; with the API only,
every span is a no-op. Each case runs in a fresh interpreter, so no provider leaks in."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK_OPENTELEMETRY = """
import importlib.abc
import sys


class Block(importlib.abc.MetaPathFinder):
    # As if opentelemetry-api were not installed: every import of it fails.
    def find_spec(self, name, path, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Block())
"""

TURN = """
import asyncio
import logging

from chatmem import (
    CONVERSATION_ID, AssistantMessage, AsyncChatClient, AsyncMessageWindowChatMemory,
    ChatClient, MessageWindowChatMemory, ToolCall, tool,
)
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem.telemetry import AVAILABLE, log_extra
from chatmem_advisors import (
    AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor, SimpleLoggerAdvisor,
)

records = []


class Keep(logging.Handler):
    def emit(self, record):
        records.append(record)


logger = logging.getLogger("chatmem_advisors.logger")
logger.setLevel(logging.DEBUG)
logger.addHandler(Keep())
seen = []


@tool
def weather(city: str) -> str:
    "The weather."
    seen.append(log_extra({CONVERSATION_ID: "007"}))
    return "sunny"


call = ToolCall(id="c1", name="weather", arguments='{"city": "Paris"}')
replies = [AssistantMessage("", tool_calls=[call]), "Sunny."]
memory = MessageWindowChatMemory()
client = (
    ChatClient.builder(ScriptedChatModel(replies))
    .default_advisors(MessageChatMemoryAdvisor(memory), SimpleLoggerAdvisor())
    .default_tools(weather)
    .build()
)
spec = client.prompt("Weather?").advisors({CONVERSATION_ID: "007"})
assert "".join(spec.stream().content()) == "Sunny."
assert len(memory.get("007")) == 4


async def main():
    memory = AsyncMessageWindowChatMemory()
    client = (
        AsyncChatClient.builder(AsyncScriptedChatModel(replies))
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory), SimpleLoggerAdvisor())
        .default_tools(weather)
        .build()
    )
    answer = await client.prompt("Weather?").advisors({CONVERSATION_ID: "007"}).call().content()
    assert answer == "Sunny."
    assert len(await memory.get("007")) == 4


asyncio.run(main())
assert [r.conversation_id for r in records] == ["007"] * 4
# No span is ever valid: the records and the tool see the conversation id only.
assert not any(hasattr(r, "trace_id") for r in records)
assert seen == [{"conversation_id": "007"}] * 2, seen
from chatmem.telemetry import store_operation

with store_operation(object(), "lookup") as span:
    assert span is None  # nothing to report to: no span at all
"""


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_opentelemetry_api_nothing_is_imported_and_a_turn_works() -> None:
    code = (
        BLOCK_OPENTELEMETRY
        + TURN
        + textwrap.dedent(
            """
        assert AVAILABLE is False
        from chatmem import _telemetry
        assert _telemetry.ENABLED is False
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        print("ok")
        """
        )
    )
    assert run(code).strip() == "ok"


def test_with_the_api_but_no_sdk_every_span_is_a_no_op() -> None:
    code = TURN + textwrap.dedent(
        """
        import sys
        from opentelemetry import trace

        assert AVAILABLE is True
        assert not trace.get_current_span().is_recording()
        assert not [m for m in sys.modules if m.startswith("opentelemetry.sdk")]
        print("ok")
        """
    )
    assert run(code).strip() == "ok"


def test_a_provider_set_after_the_client_was_built_gets_the_spans() -> None:
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from chatmem import CONVERSATION_ID, ChatClient, MessageWindowChatMemory
        from chatmem.testing import ScriptedChatModel
        from chatmem_advisors import MessageChatMemoryAdvisor

        memory = MessageWindowChatMemory()
        model = ScriptedChatModel(["one", "two"])
        client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory))
        client = client.build()
        client.prompt("a").advisors({CONVERSATION_ID: "c"}).call().content()

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        client.prompt("b").advisors({CONVERSATION_ID: "c"}).call().content()
        print(sorted(s.name for s in exporter.get_finished_spans()))
        """
    )
    assert run(code).strip() == str(
        sorted(
            [
                "chat",
                "advisor MessageChatMemoryAdvisor",
                "chat_memory get",
                "find_window chat_memory",
                "chat",
                "chat_memory add",
                "append chat_memory",
            ]
        )
    )

"""``client``: the overhead of ChatClient and the memory advisor over a bare model call (pyperf).

Four ways to get the same scripted answer: ``bare model`` (``model.call(Prompt(...))`` on a
ScriptedChatModel), ``client`` (``ChatClient.create(model).prompt(text).call().content()``),
``client + memory`` (the same with MessageChatMemoryAdvisor over MessageWindowChatMemory, window
of 20, in-memory repository: a memory read, a merge and one append per turn) and ``client +
memory, stream`` (the streamed twin). ``--async`` measures the async twins.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from benchmarks._micro import bench
from benchmarks.harness import Run, scenario
from chatmem import (
    CONVERSATION_ID,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    MessageWindowChatMemory,
    Prompt,
    UserMessage,
)
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor

ANSWER = "Your name is James Bond, and this answer is about as long as a short reply is."
QUESTION = "What is my name?"
PARAMS = {CONVERSATION_ID: "007"}


class _Discard(list):  # type: ignore[type-arg]
    """Keeps the scripted model from recording every prompt of a long run."""

    def append(self, _: object) -> None:
        pass


def _sync_cases() -> Mapping[str, Callable[[], object]]:
    model = ScriptedChatModel(respond=lambda _: ANSWER)
    model.prompts = _Discard()
    plain = ChatClient.create(model)
    memory = MessageWindowChatMemory(max_messages=20)
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    return {
        "bare model": lambda: model.call(Prompt([UserMessage(QUESTION)])),
        "client": lambda: plain.prompt(QUESTION).call().content(),
        "client + memory": lambda: client.prompt(QUESTION).advisors(PARAMS).call().content(),
        "client + memory, stream": lambda: "".join(
            client.prompt(QUESTION).advisors(PARAMS).stream().content()
        ),
    }


def _async_cases() -> Mapping[str, Callable[[], Awaitable[Any]]]:
    model = AsyncScriptedChatModel(respond=lambda _: ANSWER)
    model.prompts = _Discard()
    plain = AsyncChatClient.create(model)
    memory = AsyncMessageWindowChatMemory(max_messages=20)
    advisor = AsyncMessageChatMemoryAdvisor(memory)
    client = AsyncChatClient.builder(model).default_advisors(advisor).build()

    async def streamed() -> str:
        spec = client.prompt(QUESTION).advisors(PARAMS).stream()
        return "".join([piece async for piece in spec.content()])

    return {
        "bare model": lambda: model.call(Prompt([UserMessage(QUESTION)])),
        "client": lambda: plain.prompt(QUESTION).call().content(),
        "client + memory": lambda: client.prompt(QUESTION).advisors(PARAMS).call().content(),
        "client + memory, stream": streamed,
    }


@scenario("client", backends=None, micro=True)
def client_overhead(run: Run) -> None:
    """ChatClient and memory advisor overhead over a bare scripted-model call (pyperf)."""
    if run.is_async:
        bench(run, _async_cases(), is_async=True)
    else:
        bench(run, _sync_cases())

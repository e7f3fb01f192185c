#!/usr/bin/env python3
"""Overhead of ChatClient (+ MessageChatMemoryAdvisor) over a bare scripted-model call.

Four ways to get the same scripted answer, sync and async, in one run:

- ``bare model``: ``model.call(Prompt([...]))`` on a ScriptedChatModel;
- ``client``: ``ChatClient.create(model).prompt(text).call().content()``;
- ``client + memory``: the same with MessageChatMemoryAdvisor over MessageWindowChatMemory
  (max_messages=20, in-memory repository): memory read, merge, one append per turn;
- ``client + memory, stream``: the streamed twin (word chunks, saved at the end).

Each call is timed alone; the median of ``--calls`` calls is reported in microseconds, with
the overhead over the bare call. Usage:

    python benchmarks/client_overhead.py [--calls 5000] [--output benchmarks/client_overhead.md]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


def _answer(_: Prompt) -> str:
    return ANSWER


def time_sync(call: Callable[[], object], calls: int) -> float:
    for _ in range(min(200, calls)):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


async def time_async(call: Callable[[], Awaitable[object]], calls: int) -> float:
    for _ in range(min(200, calls)):
        await call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def sync_rows(calls: int) -> dict[str, float]:
    model = ScriptedChatModel(respond=_answer)
    model.prompts = _Discard()
    plain = ChatClient.create(model)
    memory = MessageWindowChatMemory(max_messages=20)
    with_memory = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory))
    client = with_memory.build()
    params = {CONVERSATION_ID: "007"}
    return {
        "bare model": time_sync(lambda: model.call(Prompt([UserMessage(QUESTION)])), calls),
        "client": time_sync(lambda: plain.prompt(QUESTION).call().content(), calls),
        "client + memory": time_sync(
            lambda: client.prompt(QUESTION).advisors(params).call().content(), calls
        ),
        "client + memory, stream": time_sync(
            lambda: "".join(client.prompt(QUESTION).advisors(params).stream().content()), calls
        ),
    }


async def async_rows(calls: int) -> dict[str, float]:
    model = AsyncScriptedChatModel(respond=_answer)
    model.prompts = _Discard()
    plain = AsyncChatClient.create(model)
    memory = AsyncMessageWindowChatMemory(max_messages=20)
    builder = AsyncChatClient.builder(model)
    client = builder.default_advisors(AsyncMessageChatMemoryAdvisor(memory)).build()
    params = {CONVERSATION_ID: "007"}

    async def streamed() -> str:
        spec = client.prompt(QUESTION).advisors(params).stream()
        return "".join([piece async for piece in spec.content()])

    return {
        "bare model": await time_async(lambda: model.call(Prompt([UserMessage(QUESTION)])), calls),
        "client": await time_async(lambda: plain.prompt(QUESTION).call().content(), calls),
        "client + memory": await time_async(
            lambda: client.prompt(QUESTION).advisors(params).call().content(), calls
        ),
        "client + memory, stream": await time_async(streamed, calls),
    }


class _Discard(list):  # type: ignore[type-arg]
    """Keeps the scripted model from recording thousands of prompts."""

    def append(self, _: object) -> None:
        pass


def table(sync: dict[str, float], asyn: dict[str, float]) -> str:
    lines = [
        "| path | sync µs/call | overhead µs | ratio | async µs/call | overhead µs | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in sync:
        cells = []
        for row in (sync, asyn):
            bare = row["bare model"]
            cells.append(f"{row[name]:.1f} | {row[name] - bare:+.1f} | {row[name] / bare:.1f}x")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    sync = sync_rows(args.calls)
    asyn = asyncio.run(async_rows(args.calls))
    text = (
        f"Median of {args.calls} calls each, Python {platform.python_version()}, "
        f"{platform.machine()}; in-memory repository, window of 20 messages.\n\n"
        + table(sync, asyn)
        + "\n\nThe stream row includes the scripted model building one message per word chunk "
        "(15 chunks), which a real provider's network time dwarfs."
    )
    print(text)
    if args.output is not None:
        args.output.write_text(f"# ChatClient overhead\n\n{text}\n", encoding="utf-8")


if __name__ == "__main__":
    main()

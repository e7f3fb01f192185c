#!/usr/bin/env python3
"""Client CPU of the LangChain, LlamaIndex and pydantic-ai adapters, per message or per call.

What an app pays on every turn in process, before any database: converting the messages it
adds (the framework's → chatmem's) and the ones it reads (chatmem's → the framework's), and
the LangChain history's add and windowed read over the in-memory repository. 200-character
text messages, the shape most turns have. Each figure is the median of many calls in process
CPU time; the best of ``--rounds`` rounds is reported, since other work on a shared machine
only ever adds time. To compare two versions, run the script from each checkout in turn.

Usage:
    python benchmarks/interop_conversion.py --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import AIMessage, HumanMessage
from llama_index.core.base.llms.types import ChatMessage
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from chatmem import AssistantMessage, InMemoryChatMemoryRepository, Message, UserMessage
from chatmem.interop.langchain import ChatmemMessageHistory, from_langchain, to_langchain
from chatmem.interop.llama_index import from_llama_index, to_llama_index
from chatmem.interop.pydantic_ai import from_pydantic_ai, to_pydantic_ai


def history(n: int) -> list[Message]:
    messages: list[Message] = []
    for i in range(n // 2):
        messages += [
            UserMessage(f"question {i}: " + "lorem ipsum " * 8),
            AssistantMessage(f"answer {i}: " + "dolor sit amet " * 8),
        ]
    return messages


def cpu_us(call: Callable[[], object], calls: int) -> float:
    """Median process CPU time of one call, in µs."""
    samples = []
    for _ in range(calls):
        began = time.process_time()
        call()
        samples.append(time.process_time() - began)
    return statistics.median(samples) * 1e6


def measures() -> dict[str, tuple[Callable[[], object], int, int]]:
    """Name -> (call, calls per round, messages per call)."""
    window = history(20)
    turn = window[:2]
    lc_turn = [
        HumanMessage("question x: " + "lorem ipsum " * 8),
        AIMessage("answer x: " + "dolor sit amet " * 8),
    ]
    li_turn = [
        ChatMessage(role="user", content="question x: " + "lorem ipsum " * 8),
        ChatMessage(role="assistant", content="answer x: " + "dolor sit amet " * 8),
    ]
    pa_turn = to_pydantic_ai(turn)
    pa_run = Agent(TestModel()).run_sync("question x: " + "lorem ipsum " * 8).new_messages()
    repository = InMemoryChatMemoryRepository()
    repository.append("read", window)
    reader = ChatmemMessageHistory("read", repository, max_messages=20)
    writer = ChatmemMessageHistory("write", repository, max_messages=20)
    return {
        "from_langchain, per message": (lambda: from_langchain(lc_turn), 3000, 2),
        "to_langchain, per message": (lambda: to_langchain(window), 300, 20),
        "LangChain history: add 2 messages (in memory)": (
            lambda: writer.add_messages(lc_turn),
            3000,
            1,
        ),
        "LangChain history: read a window of 20 (in memory)": (lambda: reader.messages, 1000, 1),
        "from_llama_index, per message": (lambda: from_llama_index(li_turn), 3000, 2),
        "to_llama_index, per message": (lambda: to_llama_index(window), 300, 20),
        "from_pydantic_ai, per message": (lambda: from_pydantic_ai(pa_turn), 1000, 2),
        "from_pydantic_ai, an agent run's messages, per message": (
            lambda: from_pydantic_ai(pa_run),
            1000,
            len(pa_run),
        ),
        "to_pydantic_ai, per message": (lambda: to_pydantic_ai(window), 300, 20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, (call, calls, per) in measures().items():
            call()  # first call: schemas and caches
            value = cpu_us(call, calls) / per
            best[name] = min(best.get(name, value), value)
    print(f"Process CPU µs, best of {args.rounds} rounds\n")
    print("| measured | µs |")
    print("| --- | ---: |")
    for name, value in best.items():
        print(f"| {name} | {value:.1f} |")


if __name__ == "__main__":
    main()

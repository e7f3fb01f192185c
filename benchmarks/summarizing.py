#!/usr/bin/env python3
"""Cost of the summarizing memory: ``get()`` with nothing pending, and a 500-turn run.

``get()``: the median of ``--calls`` timed calls, in microseconds, of
``MessageWindowChatMemory.get`` and of ``SummarizingChatMemory.get`` over it (max_messages=20,
a 500-turn conversation whose summary is current), on the in-memory repository and on Redis
when ``CHATMEM_TEST_REDIS_URL`` is set. The difference is the added cost: one summary read.

The run: 500 turns with max_messages=20 and a scripted summarizer (synchronous mode), counting
summarizer calls, messages and tokens (4 characters per token) sent. Usage:

    python benchmarks/summarizing.py [--calls 5000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import (
    AssistantMessage,
    CharacterTokenEstimator,
    InMemoryChatMemoryRepository,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem.memory import SummarizingChatMemory
from chatmem.testing import ScriptedChatModel, folding_summarizer


def turn(i: int) -> list[Any]:
    return [UserMessage(f"u{i} " + "words " * 10), AssistantMessage(f"a{i} " + "reply " * 10)]


def median_us(call: Callable[[], object], calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def run_500(repository: Any) -> tuple[SummarizingChatMemory, str, str]:
    model = ScriptedChatModel(respond=folding_summarizer)
    memory = SummarizingChatMemory(
        MessageWindowChatMemory(repository, max_messages=20),
        model,
        background=False,
        max_summary_tokens=300,
    )
    cid = f"bench-{uuid.uuid4()}"
    started = time.perf_counter()
    for i in range(500):
        memory.add(cid, turn(i))
    elapsed = time.perf_counter() - started
    estimate = CharacterTokenEstimator()
    messages = sum(len(p.messages[1].text.splitlines()) - 3 for p in model.prompts)  # type: ignore[union-attr]
    tokens = [sum(estimate.estimate(m) for m in p.messages) for p in model.prompts]
    report = (
        f"{len(model.prompts)} summarizer calls, {messages} messages and {sum(tokens)} tokens "
        f"sent ({max(tokens)} at most per call); 500 adds in {elapsed:.2f} s"
    )
    return memory, cid, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    repositories: list[tuple[str, Any]] = [("memory://", InMemoryChatMemoryRepository())]
    redis_url = os.environ.get("CHATMEM_TEST_REDIS_URL")
    if redis_url:
        from chatmem_repositories.redis import RedisChatMemoryRepository

        repositories.append(
            ("redis", RedisChatMemoryRepository.from_url(redis_url, key_prefix="bench-summary"))
        )
    for name, repository in repositories:
        memory, cid, report = run_500(repository)
        window = memory.memory
        assert memory.get(cid)[0].text.startswith("Summary")  # type: ignore[union-attr]
        plain = median_us(partial(window.get, cid), args.calls)
        summarizing = median_us(partial(memory.get, cid), args.calls)
        print(f"{name}: {report}")
        print(
            f"{name}: get() {plain:.1f} us for the window, {summarizing:.1f} us with the "
            f"summary (+{summarizing - plain:.1f} us, median of {args.calls})"
        )
        repository.delete_by_conversation_id(cid)
        repository.close()


if __name__ == "__main__":
    main()

"""``summarizing``: what the summarizing memory adds to ``get()``, and what a long run sends.

``get()``: ``--turns`` timed calls of ``MessageWindowChatMemory.get`` and of
``SummarizingChatMemory.get`` over it (window of 20) on a conversation whose summary is
current; the difference is one summary read. Before that, 500 turns (``--sizes``) are added
with a scripted summarizer (synchronous mode), counting summarizer calls and tokens sent (4
characters per token).
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from benchmarks.harness import Run, repository_options, scenario
from chatmem import AssistantMessage, CharacterTokenEstimator, MessageWindowChatMemory, UserMessage
from chatmem.memory import SummarizingChatMemory
from chatmem.testing import ScriptedChatModel, folding_summarizer
from chatmem_repositories import create_repository


def _turn(i: int) -> list[Any]:
    return [UserMessage(f"u{i} " + "words " * 10), AssistantMessage(f"a{i} " + "reply " * 10)]


def _timed(call: Any, calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        call()
        samples.append((time.perf_counter() - began) * 1000)
    return samples


@scenario("summarizing", backends=("memory", "redis"), sizes=(500,), turns=2000)
def summarizing(run: Run) -> None:
    """get() of the summarizing memory against the plain window, and a long run's model calls."""
    assert run.url
    repository = create_repository(run.url, **repository_options(run.url))
    model = ScriptedChatModel(respond=folding_summarizer)
    window = MessageWindowChatMemory(repository, max_messages=20)
    memory = SummarizingChatMemory(window, model, background=False, max_summary_tokens=300)
    cid = f"summary-{uuid.uuid4().hex[:8]}"
    turns = run.sizes[-1]
    try:
        began = time.perf_counter()
        for i in range(turns):
            memory.add(cid, _turn(i))
        added = time.perf_counter() - began
        estimate = CharacterTokenEstimator()
        tokens = [sum(estimate.estimate(m) for m in p.messages) for p in model.prompts]
        plain = _timed(lambda: window.get(cid), run.turns)
        summarized = _timed(lambda: memory.get(cid), run.turns)
        run.record({"call": "window get", "turns_added": turns}, plain)
        run.record(
            {"call": "summarizing get", "turns_added": turns},
            summarized,
            results={
                "added_ms": round(statistics.median(summarized) - statistics.median(plain), 4),
                "summarizer_calls": len(model.prompts),
                "tokens_sent": sum(tokens),
                "max_tokens_per_call": max(tokens, default=0),
                "add_seconds": round(added, 3),
            },
        )
    finally:
        repository.delete_by_conversation_id(cid)
        repository.close()

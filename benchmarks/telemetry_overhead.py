#!/usr/bin/env python3
"""What OpenTelemetry instrumentation costs per turn: without the API, API only, SDK.

A turn is ``ChatClient.prompt(text).call().content()`` (and its streamed twin) with
MessageChatMemoryAdvisor over MessageWindowChatMemory (in-memory repository, window of 20)
and a scripted model: one memory read, one model call, one append. Three modes, each in its
own interpreter because the mode is decided at import:

- ``no API``: ``opentelemetry`` cannot be imported (a ``sys.meta_path`` finder blocks it),
  as when ``opentelemetry-api`` is not installed;
- ``API only``: the API is installed, no SDK is set up: every span is a no-op;
- ``SDK``: a TracerProvider with a SimpleSpanProcessor into an InMemorySpanExporter and a
  MeterProvider with an InMemoryMetricReader: every span (7 per turn) is recorded and
  exported, every histogram point aggregated.

The modes run in interleaved rounds (none, api, sdk, none, api, sdk, ...) so machine noise
hits all three alike; each call is timed alone and the median of all calls is reported in
microseconds. Usage:

    python benchmarks/telemetry_overhead.py [--calls 2000] [--rounds 3] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("none", "api", "sdk")
LABELS = {"none": "no API", "api": "API only", "sdk": "SDK + in-memory exporter"}
PATHS = ("sync call", "sync stream", "async call", "async stream")

BLOCK = """
import importlib.abc
import sys


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Block())
"""

SDK = """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
"""

WORKER = """
import asyncio, json, statistics, sys, time
sys.path.insert(0, ROOT)
from chatmem import (
    CONVERSATION_ID, AsyncChatClient, AsyncMessageWindowChatMemory, ChatClient,
    MessageWindowChatMemory,
)
from chatmem.telemetry import AVAILABLE
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor

assert AVAILABLE == (MODE != "none")
ANSWER = "Your name is James Bond, and this answer is about as long as a short reply is."


class Discard(list):
    def append(self, _):
        pass


def clear():
    # Keep the exporter from growing for thousands of turns (outside the timed calls).
    exporter = globals().get("EXPORTER")
    if exporter is not None:
        exporter.clear()


def conversation(i):
    return {CONVERSATION_ID: f"c{i % 50}"}


def sync_client():
    model = ScriptedChatModel(respond=lambda _: ANSWER)
    model.prompts = Discard()
    memory = MessageWindowChatMemory(max_messages=20)
    return ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()


def async_client():
    model = AsyncScriptedChatModel(respond=lambda _: ANSWER)
    model.prompts = Discard()
    memory = AsyncMessageWindowChatMemory(max_messages=20)
    builder = AsyncChatClient.builder(model)
    return builder.default_advisors(AsyncMessageChatMemoryAdvisor(memory)).build()


def time_sync(turn):
    for i in range(200):
        turn(i)
    samples = []
    for i in range(CALLS):
        if i % 500 == 0:
            clear()
        start = time.perf_counter_ns()
        turn(i)
        samples.append(time.perf_counter_ns() - start)
    return samples


async def time_async(turn):
    for i in range(200):
        await turn(i)
    samples = []
    for i in range(CALLS):
        if i % 500 == 0:
            clear()
        start = time.perf_counter_ns()
        await turn(i)
        samples.append(time.perf_counter_ns() - start)
    return samples


client = sync_client()
results = {
    "sync call": time_sync(
        lambda i: client.prompt("Hi").advisors(conversation(i)).call().content()
    ),
    "sync stream": time_sync(
        lambda i: list(client.prompt("Hi").advisors(conversation(i)).stream().content())
    ),
}


async def main():
    client = async_client()

    async def call(i):
        return await client.prompt("Hi").advisors(conversation(i)).call().content()

    async def stream(i):
        return [p async for p in client.prompt("Hi").advisors(conversation(i)).stream().content()]

    results["async call"] = await time_async(call)
    results["async stream"] = await time_async(stream)


asyncio.run(main())
print(json.dumps(results))
"""


def run_mode(mode: str, calls: int) -> dict[str, list[int]]:
    prefix = {"none": BLOCK, "api": "", "sdk": SDK}[mode]
    setup = f"ROOT = {str(ROOT)!r}\nMODE = {mode!r}\nCALLS = {calls}\n"
    code = prefix + setup + WORKER
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr}")
    result: dict[str, list[int]] = json.loads(done.stdout)
    return result


def table(medians: dict[str, dict[str, float]], calls: int, rounds: int) -> str:
    lines = [
        "# Telemetry overhead per turn",
        "",
        f"Median of {calls * rounds} turns per cell ({rounds} interleaved rounds of {calls}), "
        f"Python {platform.python_version()}, {platform.machine()}; ChatClient + "
        "MessageChatMemoryAdvisor + in-memory repository, scripted model. µs per turn; "
        "in brackets the difference from no API.",
        "",
        "| path | " + " | ".join(LABELS[m] for m in MODES) + " |",
        "| --- | " + " | ".join("---:" for _ in MODES) + " |",
    ]
    for path in PATHS:
        base = medians["none"][path]
        cells = []
        for mode in MODES:
            value = medians[mode][path]
            cells.append(f"{value:.1f}" if mode == "none" else f"{value:.1f} ({value - base:+.1f})")
        lines.append(f"| {path} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed turns per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    samples: dict[str, dict[str, list[int]]] = {m: {p: [] for p in PATHS} for m in MODES}
    for round_ in range(args.rounds):
        for mode in MODES:
            for path, values in run_mode(mode, args.calls).items():
                samples[mode][path] += values
            print(f"round {round_ + 1}/{args.rounds}: {mode} done", file=sys.stderr)
    medians = {
        mode: {path: statistics.median(values) / 1000 for path, values in paths.items()}
        for mode, paths in samples.items()
    }
    text = table(medians, args.calls, args.rounds)
    print(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

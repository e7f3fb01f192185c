#!/usr/bin/env python3
"""What the message codec and message construction cost, against an earlier implementation.

One turn of the memory advisor decodes a window of stored messages and encodes and builds
the user message and the answer. This benchmark times exactly those pieces, per message:

- ``decode``: ``decode_message`` of each of 20 stored records (10 user, 10 assistant);
- ``decode many``: ``decode_messages`` of the same 20 records (an implementation without it
  decodes them one at a time, as in ``decode``);
- ``encode``: ``encode_message`` of a user message and an answer;
- ``construct``: ``UserMessage(text)`` plus ``AssistantMessage(text)``;
- ``uuid7``: one message id;
- ``decode +r``, ``encode +r``, ``construct +r``: the same for one answer of a reasoning model
  (a thinking part with a signature, and token usage), for an implementation that has them.
  ``decode +r`` decodes without the cache of records read before, as the first read of a
  record does.

The earlier implementation is ``chatmem/messages.py`` and ``chatmem/_uuid7.py`` as they were
at ``--before`` (a git revision), loaded from ``git show`` into a temporary package. Both run
in the same interpreter in interleaved rounds (before, current, before, ...), so machine noise
hits both alike; each round times ``--calls`` repetitions in process CPU time and the report
gives the median and the fastest round in microseconds per message, with the ratio
current/before. Usage:

    python benchmarks/codec.py [--before ce89631] [--chars 200] [--calls 500] [--rounds 40]
                               [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatmem import messages as current  # noqa: E402

WINDOW = 20


def load_before(revision: str) -> ModuleType:
    """Import chatmem.messages as it was at ``revision``, with that revision's uuid7."""
    directory = Path(tempfile.mkdtemp(prefix="chatmem-codec-before-"))
    package = directory / "chatmem_codec_before"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("messages.py", "_uuid7.py"):
        source = subprocess.run(
            ["git", "show", f"{revision}:chatmem/{name}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        source = source.replace(
            "from chatmem._uuid7 import", "from chatmem_codec_before._uuid7 import"
        )
        (package / name).write_text(source)
    sys.path.insert(0, str(directory))
    return importlib.import_module("chatmem_codec_before.messages")


def cases(module: ModuleType, chars: int) -> dict[str, tuple[Callable[[], object], int]]:
    """The timed operations of one implementation: name -> (call, messages per call)."""
    text = ("abcdefghij" * (chars // 10 + 1))[:chars]
    window = [
        (module.UserMessage if i % 2 == 0 else module.AssistantMessage)(text, metadata={})
        for i in range(WINDOW)
    ]
    # Stored records as the current encoder writes them (the format did not change).
    stored = [module.encode_message(message) for message in window]
    user, answer = window[0], window[1]
    decode = module.decode_message
    encode = module.encode_message
    new_user, new_answer = module.UserMessage, module.AssistantMessage

    def decode_window() -> object:
        return [decode(record, conversation_id="c") for record in stored]

    def encode_turn() -> object:
        return encode(user), encode(answer)

    def construct_turn() -> object:
        return new_user(text), new_answer(text)

    uuid7 = sys.modules[module.__name__.replace("messages", "_uuid7")].uuid7
    out: dict[str, tuple[Callable[[], object], int]] = {
        "decode": (decode_window, WINDOW),
        "encode": (encode_turn, 2),
        "construct": (construct_turn, 2),
        "uuid7": (uuid7, 1),
    }
    if hasattr(module, "decode_messages"):
        many = module.decode_messages
        out["decode many"] = (lambda: many(stored, conversation_id="c"), WINDOW)
    else:
        out["decode many"] = (decode_window, WINDOW)
    assert [decode(r) for r in stored] == window
    if hasattr(module, "ReasoningPart"):
        out.update(reasoning_cases(module, text))
    return out


def reasoning_cases(module: ModuleType, text: str) -> dict[str, tuple[Callable[[], object], int]]:
    """The same for an answer of a reasoning model: a thinking part with a signature, usage.

    Only an implementation with reasoning parts has these cases.
    """

    def answer() -> Any:
        part = module.ReasoningPart(
            text=text, signature="EqQB" + "x" * 396, provider="anthropic", model="claude"
        )
        usage = module.TokenUsage(input_tokens=1200, output_tokens=300, cache_read_tokens=1024)
        return module.AssistantMessage(text, reasoning=[part], usage=usage)

    message = answer()
    record = module.encode_message(message)
    decode_uncached = module._decode_fast
    assert decode_uncached(record) == message
    return {
        "decode +r": (lambda: decode_uncached(record), 1),
        "encode +r": (lambda: module.encode_message(message), 1),
        "construct +r": (answer, 1),
    }


def measure(
    implementations: dict[str, dict[str, tuple[Callable[[], object], int]]],
    calls: int,
    rounds: int,
) -> dict[str, dict[str, list[float]]]:
    """Interleaved rounds; microseconds per message of every round, by case and implementation.

    Time is the process's CPU time, not wall time: on a shared machine a round that loses
    the CPU to another process is not charged for the wait.
    """
    samples: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for implementation, timed in implementations.items():
            for case, (call, per_call) in timed.items():
                start = time.process_time()
                for _ in range(calls):
                    call()
                elapsed = time.process_time() - start
                per_message = elapsed / calls / per_call * 1e6
                samples.setdefault(case, {}).setdefault(implementation, []).append(per_message)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="ce89631", help="git revision to compare against")
    parser.add_argument("--chars", type=int, default=200, help="characters of text per message")
    parser.add_argument("--calls", type=int, default=500, help="repetitions per round")
    parser.add_argument("--rounds", type=int, default=40, help="interleaved rounds")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    before = load_before(args.before)
    implementations = {
        "before": cases(before, args.chars),
        "current": cases(current, args.chars),
    }
    load_start = os.getloadavg()
    samples = measure(implementations, args.calls, args.rounds)
    load_end = os.getloadavg()

    rows: list[dict[str, Any]] = []
    print(f"µs per message, {args.chars}-char text; {args.rounds} rounds x {args.calls} calls;")
    print(f"before = {args.before}; load average {load_start[0]:.2f} -> {load_end[0]:.2f}")
    print(f"{'case':14} {'before med':>11} {'current med':>12} {'ratio':>6}   (fastest round)")
    for case, by_implementation in samples.items():
        medians = {name: statistics.median(v) for name, v in by_implementation.items()}
        fastest = {name: min(v) for name, v in by_implementation.items()}
        base = medians.get("before")
        ratio = medians["current"] / base if base else None
        print(
            f"{case:14} {base if base else float('nan'):11.2f} {medians['current']:12.2f} "
            f"{ratio if ratio else float('nan'):6.2f}   "
            + "  ".join(f"{name} {value:.2f}" for name, value in fastest.items())
        )
        rows.append({"case": case, "median": medians, "fastest": fastest, "ratio": ratio})
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "before": args.before,
                    "chars": args.chars,
                    "calls": args.calls,
                    "rounds": args.rounds,
                    "load_average": [load_start[0], load_end[0]],
                    "python": platform.python_version(),
                    "unit": "microseconds per message",
                    "results": rows,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()

"""What the bulk benchmarks share: timing, the machine's load, server CPU, destinations."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["add_destination_arguments", "destinations", "load_average", "process_cpu", "timed"]


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``action``; return its result and the wall seconds it took."""
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``1.2/1.5/1.9``."""
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def process_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes used so far; 0 for those not visible."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def add_destination_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--postgresql``, ``--redis`` (the test servers by default) and the sizes."""
    parser.add_argument("--postgresql", default=os.environ.get("CHATMEM_TEST_POSTGRESQL_URL"))
    parser.add_argument("--redis", default=os.environ.get("CHATMEM_TEST_REDIS_URL"))
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--per-conversation", type=int, default=50)


def destinations(args: argparse.Namespace) -> dict[str, str | None]:
    """The repository URL of each destination given (``None``: not measured)."""
    return {
        "postgresql": f"{args.postgresql}?initialize_schema=always" if args.postgresql else None,
        "redis": args.redis or None,
    }

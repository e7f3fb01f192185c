"""``--profile``: where a scenario's time goes, by function and by layer (chatmem, driver).

cProfile (the standard library's) wraps the whole scenario; the report is the top functions
by own time and the share of own time spent in chatmem, in its backends, in the drivers and
in the rest (asyncio, the standard library), which is what the per-backend profile scripts
printed.
"""

from __future__ import annotations

import cProfile
import io
import pstats
from collections.abc import Callable
from pathlib import Path

__all__ = ["layer_of", "profiled"]

_DRIVERS = (
    "sqlalchemy",
    "psycopg",
    "pymysql",
    "aiomysql",
    "aiosqlite",
    "sqlite3",
    "redis",
    "pymongo",
    "cassandra",
    "neo4j",
)


def layer_of(filename: str) -> str:
    """The layer a profiled function's file belongs to."""
    path = Path(filename).parts
    if "chatmem_repositories" in path:
        return "chatmem backend"
    if any(part.startswith("chatmem") for part in path):
        return "chatmem"
    if any(part in _DRIVERS for part in path):
        return "driver"
    if "benchmarks" in path:
        return "benchmark"
    return "other"


def profiled(action: Callable[[], None], top: int = 25) -> str:
    """Run ``action`` under cProfile and return the report as text."""
    profiler = cProfile.Profile()
    profiler.runcall(action)
    stats = pstats.Stats(profiler)
    layers: dict[str, float] = {}
    raw = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_cc, _nc, own, _cum, _callers) in raw.items():
        layers[layer_of(filename)] = layers.get(layer_of(filename), 0.0) + own
    total = sum(layers.values()) or 1.0
    out = io.StringIO()
    out.write("own time by layer:\n")
    for layer, seconds in sorted(layers.items(), key=lambda item: -item[1]):
        out.write(f"  {layer:<16} {seconds:8.3f} s {100 * seconds / total:5.1f} %\n")
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()

"""Results as data: every benchmark run appends one record to its scenario's JSON-lines file.

A record says what was measured (scenario, parameters, raw samples and their percentiles) and
where (commit and dirty flag, Python, package versions, CPU model and count, load average,
server versions), so a number in the docs can be traced to the run that produced it, and runs
on other machines or commits can be told apart. Nothing is kept by hand: the docs are
generated from these files.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["RESULTS", "append_record", "environment", "read_records", "summarize"]

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent

# Versions recorded with every run: chatmem's drivers and the peers' libraries.
_PACKAGES = (
    "chatmem",
    "sqlalchemy",
    "psycopg",
    "pymysql",
    "aiomysql",
    "aiosqlite",
    "redis",
    "hiredis",
    "pymongo",
    "cassandra-driver",
    "neo4j",
    "pydantic",
    "cryptography",
    "langchain-core",
    "langchain-postgres",
    "langchain-community",
    "llama-index-core",
    "openai-agents",
    "google-adk",
    "langgraph",
    "langgraph-checkpoint-postgres",
    "pyperf",
)


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions(names: Iterable[str]) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def environment(servers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Describe this run's machine, code and packages.

    Args:
        servers: Server versions the scenario read off its servers (name -> version).
    """
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "load": [round(value, 2) for value in os.getloadavg()],
        "packages": _versions(_PACKAGES),
        "servers": dict(servers or {}),
    }


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """Count, min, median, p95, p99, max and mean of ``samples`` (empty: only the count)."""
    if not samples:
        return {"count": 0}
    ordered = sorted(samples)

    def percentile(p: float) -> float:
        # Nearest rank: a reported p99 is a sample that was measured.
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]

    return {
        "count": len(ordered),
        "min": ordered[0],
        "median": statistics.median(ordered),
        "p95": percentile(95),
        "p99": percentile(99),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
    }


def append_record(
    scenario: str,
    params: Mapping[str, Any],
    samples: Sequence[float] | None = None,
    *,
    unit: str = "ms",
    results: Mapping[str, Any] | None = None,
    servers: Mapping[str, str] | None = None,
    directory: Path | None = None,
) -> dict[str, Any]:
    """Append one run's record to ``<directory>/<scenario>.jsonl`` and return it.

    Args:
        scenario: The scenario's name (also the file name).
        params: What was measured: backend, peer, sizes, concurrency...
        samples: Raw samples (one per operation measured), kept in full.
        unit: The samples' unit.
        results: Derived numbers the scenario computed itself (throughput, counts...).
        servers: Server versions read off the servers.
        directory: Where the file is; default ``benchmarks/results``.
    """
    record: dict[str, Any] = {
        "scenario": scenario,
        "params": dict(params),
        "unit": unit,
        "summary": summarize(samples or []),
        "results": dict(results or {}),
        "samples": list(samples or []),
        **environment(servers),
    }
    target = (directory or RESULTS) / f"{scenario}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")
    return record


def read_records(scenario: str, directory: Path | None = None) -> list[dict[str, Any]]:
    """Every record of ``scenario``, oldest first (none if it never ran)."""
    source = (directory or RESULTS) / f"{scenario}.jsonl"
    if not source.exists():
        return []
    return [json.loads(line) for line in source.read_text().splitlines() if line.strip()]

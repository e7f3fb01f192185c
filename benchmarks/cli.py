"""``python -m benchmarks``: list the scenarios, run one, or regenerate the docs.

Usage::

    python -m benchmarks list
    python -m benchmarks turns --backend postgresql,redis --sizes 10,1000,10000 --turns 200
    python -m benchmarks floor --url sqlite:////tmp/floor.db --async
    python -m benchmarks load --backend postgresql --clients 1,8,32 --duration 10
    python -m benchmarks codec --fast          # micro-benchmarks take pyperf's options
    python -m benchmarks turns --backend redis --profile
    python -m benchmarks report                # docs/benchmarks.md and its charts

Every run appends its records to ``benchmarks/results/<scenario>.jsonl`` (``--results``
elsewhere); ``report`` renders the docs from the newest of them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks import scenarios
from benchmarks.harness import BACKENDS, SCENARIOS, Run, Scenario, backend_of, backend_url
from benchmarks.profiling import profiled

__all__ = ["main"]


def _ints(text: str) -> list[int]:
    return sorted(int(part.replace("_", "")) for part in text.split(",") if part)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("scenario", help="a scenario's name (see `list`), `list` or `report`")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--backend", help=f"backends by name, comma-separated: {', '.join(BACKENDS)}, all"
    )
    where.add_argument("--url", help="a repository URL (instead of --backend)")
    parser.add_argument("--sizes", type=_ints, help="history lengths or entries: 10,1000")
    parser.add_argument("--turns", type=int, help="measured turns (or calls) per size")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured turns per size")
    parser.add_argument("--duration", type=float, help="measured seconds per level (load)")
    parser.add_argument("--clients", type=_ints, help="concurrent clients per level (load)")
    parser.add_argument("--async", dest="is_async", action="store_true", help="the async twin")
    parser.add_argument("--profile", action="store_true", help="print a cProfile report")
    parser.add_argument("--results", type=Path, help="records directory (benchmarks/results)")
    parser.add_argument("--docs", type=Path, default=None, help="report: docs directory")
    return parser


def _targets(args: argparse.Namespace, found: Scenario) -> list[tuple[str | None, str | None]]:
    if found.backends is None:
        return [(None, None)]
    if args.url:
        return [(backend_of(args.url), args.url)]
    names = args.backend.split(",") if args.backend else list(found.backends)
    if names == ["all"]:
        names = list(BACKENDS)
    return [(name, backend_url(name)) for name in names]


def run_scenario(found: Scenario, args: argparse.Namespace, extra: Sequence[str]) -> list[Run]:
    """Run ``found`` once per backend the options name; return the runs (with their records)."""
    runs = []
    for backend, url in _targets(args, found):
        run = Run(
            scenario=found.name,
            backend=backend,
            url=url,
            sizes=args.sizes or list(found.sizes),
            turns=args.turns or found.turns,
            warmup=args.warmup,
            duration=args.duration or found.duration,
            clients=args.clients or list(found.clients),
            is_async=args.is_async,
            results=args.results,
            extra=list(extra),
        )
        began = time.perf_counter()
        quiet = "--worker" in extra  # a pyperf worker: its manager reports
        if args.profile:
            print(profiled(lambda run=run: found.func(run)))
        else:
            found.func(run)
        for record in [] if quiet else run.records:
            summary = record["summary"]
            median = f"median {summary['median']:.4g} {record['unit']}" if summary["count"] else ""
            shown = {k: v for k, v in record["params"].items() if k != "flavor"}
            derived = {k: v for k, v in record["results"].items() if not isinstance(v, list)}
            print(f"{found.name} {shown} {median} {derived or ''}".rstrip())
        if not quiet:
            took = time.perf_counter() - began
            print(f"# {found.name} on {backend or 'in-process'}: {took:.1f} s")
        runs.append(run)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    scenarios.load_all()
    if args.scenario == "list":
        width = max(map(len, SCENARIOS))
        for name, found in sorted(SCENARIOS.items()):
            where = "in-process" if found.backends is None else ",".join(found.backends)
            print(f"{name:<{width}}  {found.summary} [{where}]")
        return 0
    if args.scenario == "report":
        from benchmarks import report  # matplotlib only when rendering

        began = time.perf_counter()
        written = report.render(results=args.results, docs=args.docs)
        for path in written:
            print(path)
        print(f"# report: {time.perf_counter() - began:.1f} s")
        return 0
    found = SCENARIOS.get(args.scenario)
    if found is None:
        parser.error(f"unknown scenario {args.scenario!r}; `python -m benchmarks list`")
    if extra and not found.micro:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    run_scenario(found, args, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())

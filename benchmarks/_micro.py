"""Micro-benchmarks on pyperf: worker processes, calibrated loops, warm-ups, its statistics.

A micro scenario hands :func:`bench` its cases (name -> call, or an async call); pyperf runs
each in fresh worker processes (``python -m benchmarks <scenario> --worker ...``) and returns
the values to the manager, which records them (microseconds per call). Options the harness
does not know are pyperf's: ``--fast``, ``--rigorous``, ``--in-process``, ``-o out.json`` (and
``python -m pyperf compare_to a.json b.json`` compares two checkouts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import pyperf

from benchmarks.harness import Run

__all__ = ["bench"]

Case = Callable[[], object] | Callable[[], Awaitable[object]]


def bench(
    run: Run,
    cases: Mapping[str, Case],
    *,
    is_async: bool = False,
    before: Mapping[str, Callable[[], None]] | None = None,
) -> None:
    """Run ``cases`` with pyperf and record each (manager process only).

    Args:
        run: The scenario's run; ``run.extra`` holds pyperf's options.
        cases: Name -> the call measured (a coroutine function when ``is_async``).
        is_async: The cases are coroutine functions (pyperf's ``bench_async_func``).
        before: Name -> a setup to do just before that case, in the process that runs it.
    """
    # One Runner per process is pyperf's guard against a script that parses sys.argv twice;
    # the harness passes each Runner its own arguments, so a second scenario in one process
    # (the smoke tests) may create its own.
    pyperf.Runner._created.clear()
    runner = pyperf.Runner(program_args=("-m", "benchmarks", run.scenario))
    args = runner.parse_args(list(run.extra))
    for name, call in cases.items():
        if before and name in before:
            before[name]()
        if is_async:
            measured = runner.bench_async_func(name, call)
        else:
            measured = runner.bench_func(name, call)
        if measured is None or args.worker:
            continue  # a worker, or a case another worker runs
        values = [value * 1e6 for value in measured.get_values()]
        run.record({"case": name}, values, unit="us")

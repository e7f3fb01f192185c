"""Every benchmark scenario runs at tiny sizes, so that none rots between benchmark runs.

Scenarios run in-process through the command line's ``main`` (in-memory and SQLite stores; the
micro-benchmarks in pyperf's in-process, single-value mode) and write their records into a
temporary directory, never into ``benchmarks/results``. They measure nothing here: the test
checks that each runs and records what it says.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from benchmarks import scenarios
from benchmarks._results import RESULTS
from benchmarks.cli import main
from benchmarks.harness import SCENARIOS
from benchmarks.peers import __dict__ as peers_module
from tests.support.servers import server_url

# The peers scenario imports langchain-community, which warns on import that it is being
# sunset; which test imports it first depends on the selection, so every test here allows it.
# Peer libraries also leave SQLite connections to the collector (the Agents SDK's
# SQLiteSession keeps one per worker thread and closes only the calling thread's), which
# Python 3.13 reports: each smoke run collects them itself (below), so the report lands here.
pytestmark = [
    pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

scenarios.load_all()

PYPERF_ONCE = ["--in-process", "--debug-single-value", "--quiet"]
# The options of each scenario's smoke run, and the records it must append.
SMOKE: dict[str, tuple[list[str], int]] = {
    "turns": (["--backend", "memory,sqlite", "--sizes", "10,30", "--turns", "2"], 4),
    "floor": (["--backend", "memory,sqlite", "--sizes", "10,30", "--turns", "2"], 4),
    "load": (["--backend", "memory", "--clients", "1,2", "--duration", "0.05"], 2),
    "storage": (["--backend", "sqlite", "--sizes", "200"], 1),
    "bulk": (["--backend", "sqlite", "--sizes", "100"], 3),
    "erase": (["--backend", "sqlite", "--sizes", "10"], 4),
    "fork": (["--backend", "memory", "--sizes", "10,30", "--turns", "1"], 4),
    "summarizing": (["--backend", "memory", "--sizes", "30", "--turns", "3"], 2),
    "vector": (["--backend", "memory", "--sizes", "100", "--turns", "2"], 1),
    "codec": (PYPERF_ONCE, 7),
    "client": (PYPERF_ONCE, 4),
    "telemetry": (PYPERF_ONCE, 2),
    "peers": (["--backend", "sqlite", "--sizes", "10", "--turns", "1"], 1),
}


def records(directory: Path, scenario: str) -> list[dict[str, object]]:
    lines = (directory / f"{scenario}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_every_scenario_has_a_smoke_run() -> None:
    assert sorted(SMOKE) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_scenario_runs_and_records(name: str, tmp_path: Path) -> None:
    if name == "peers" and "measure_peers" not in peers_module:
        pytest.skip("benchmarks.peers.measure_peers is not there yet")
    options, expected = SMOKE[name]
    before = records(RESULTS, name) if (RESULTS / f"{name}.jsonl").exists() else []
    assert main([name, *options, "--results", str(tmp_path)]) == 0
    gc.collect()  # what the scenario's libraries left open is reported in this test
    written = records(tmp_path, name)
    assert len(written) >= expected
    for record in written:
        assert record["scenario"] == name
        assert record["commit"] is not None
        assert record["summary"]["count"] == len(record["samples"])  # type: ignore[index]
    assert not (RESULTS / f"{name}.jsonl").exists() or before == records(RESULTS, name)


@pytest.mark.parametrize("name", ["turns", "floor", "load"])
def test_async_twin_on_a_server(name: str, tmp_path: Path) -> None:
    url = server_url("postgresql")
    options = ["--sizes", "10", "--turns", "2", "--clients", "2", "--duration", "0.05"]
    assert main([name, "--url", url, "--async", *options, "--results", str(tmp_path)]) == 0
    flavors = {record["params"]["flavor"] for record in records(tmp_path, name)}  # type: ignore[index]
    assert flavors == {"async"}


def test_profile_reports_layers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--sizes", "10", "--turns", "2", "--profile", "--results", str(tmp_path)]
    assert main(["turns", "--backend", "memory", *options]) == 0
    out = capsys.readouterr().out
    assert "own time by layer" in out
    assert "chatmem" in out


def test_list_names_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert listed == set(SCENARIOS)

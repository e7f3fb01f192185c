"""docs/benchmarks.md is what `python -m benchmarks report` renders from the records."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.report import DOCS, markdown, newest


def test_the_page_is_rendered_from_the_checked_in_records() -> None:
    page = (DOCS / "benchmarks.md").read_text()
    assert page == markdown(), "run `python -m benchmarks report` and commit the page"


def test_the_page_stays_short() -> None:
    assert (
        len((DOCS / "benchmarks.md").read_text().splitlines()) <= 160
    )  # about 150, and the peers table's rows


def test_newest_record_of_each_parameter_set_wins(tmp_path: Path) -> None:
    lines = [
        {"params": {"backend": "redis", "n": 10}, "summary": {"count": 1, "median": 1.0}},
        {"params": {"backend": "redis", "n": 10}, "summary": {"count": 1, "median": 2.0}},
        {"params": {"backend": "redis", "n": 99}, "summary": {"count": 1, "median": 3.0}},
    ]
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    from benchmarks._results import read_records

    medians = [r["summary"]["median"] for r in newest(read_records("turns", tmp_path))]
    assert medians == [2.0, 3.0]

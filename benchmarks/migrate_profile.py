#!/usr/bin/env python3
"""Where ``chatmem migrate --from langchain-sql``'s client CPU goes, before and after, by layer.

The source is filled as in ``migrate_sources.py`` (LangChain's ``SQLChatMessageHistory`` into
SQLite). For each pipeline of ``migrate_pipeline.py`` (``before``: every conversation
converted through LangChain's classes, everything appended; ``after``: ids first, only
what is missing converted and appended, one conversation at a time here so the profile is
one thread's), a first run into an empty destination and a no-op re-run are profiled with
cProfile on the process's CPU clock, so the shares do not depend on what else the shared
machine runs. Reported per run: wall and CPU seconds (profiled, so inflated alike for both)
and the CPU of each layer (cumulative, so nested layers overlap: ``destination append``
includes the repository's encoding, ``source rows`` the SQLite reads):

- ``source rows``: SQLAlchemy's result rows; ``json.loads``: the stored message dicts;
- ``convert (LangChain classes)``: ``messages_from_dict`` + ``from_langchain`` (before, and
  after for messages the direct path does not take);
- ``ids``: the ids derived before converting (after); ``convert (direct)``: the dicts
  straight to messages (after);
- ``destination append`` / ``destination find_history``: the repository's calls (the
  completeness check and the verification read).

Usage:

    python benchmarks/migrate_profile.py \
        --destination postgresql+psycopg://test:test@127.0.0.1:54329/testdb?initialize_schema=always
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from migrate_pipeline import before_import, before_read
from migrate_sources import fill

from chatmem import ChatMemoryLog
from chatmem_cli.importers.sources import import_conversations, read_source
from chatmem_repositories import create_repository

LAYERS = {
    "source rows": ("sqlalchemy/engine/result.py", "__iter__"),
    "json.loads": ("json/__init__.py", "loads"),
    "convert (LangChain classes)": ("importers/langchain.py", "_convert"),
    "ids": ("importers/langchain.py", "_direct_id"),
    "convert (direct)": ("importers/langchain.py", "convert"),
    "destination append": ("repository.py", "append"),
    "destination find_history": ("repository.py", "find_history"),
}


def layers(profile: cProfile.Profile) -> dict[str, float]:
    found: dict[str, float] = {}
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for (filename, _, name), (_, _, _, cumulative, _) in stats.items():
        for layer, (suffix, function) in LAYERS.items():
            if filename.endswith(suffix) and name == function:
                found[layer] = max(found.get(layer, 0.0), cumulative)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destination", required=True, help="a chatmem repository URL")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--per-conversation", type=int, default=50)
    args = parser.parse_args()
    print("load average (1/5/15 min): " + "/".join(f"{v:.1f}" for v in os.getloadavg()))
    with tempfile.TemporaryDirectory() as directory:
        source = f"sqlite:///{Path(directory) / 'langchain.db'}"
        sessions, _ = fill(
            source, f"bench-{uuid.uuid4().hex[:8]}", args.messages, args.per_conversation
        )
        pipelines = {
            "before": lambda r: before_import(before_read(source), r),
            "after": lambda r: (
                import_conversations(
                    read_source("langchain-sql", source), r, verify=True
                ).messages_stored
            ),
        }
        print("| pipeline | run | wall s | CPU s | " + " | ".join(LAYERS) + " |")
        print("| --- " * (4 + len(LAYERS)) + "|")
        with create_repository(args.destination) as repository:
            assert isinstance(repository, ChatMemoryLog)
            try:
                for name, pipeline in pipelines.items():
                    for session in sessions:
                        repository.delete_by_conversation_id(session)
                    for run in ("first run", "no-op re-run"):
                        profile = cProfile.Profile(time.process_time)
                        wall, cpu = time.perf_counter(), time.process_time()
                        profile.enable()
                        pipeline(repository)
                        profile.disable()
                        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                        found = layers(profile)
                        cells = " | ".join(
                            f"{found[layer]:.2f}" if layer in found else "-" for layer in LAYERS
                        )
                        print(f"| {name} | {run} | {wall:.1f} | {cpu:.2f} | {cells} |")
            finally:
                for session in sessions:
                    repository.delete_by_conversation_id(session)


if __name__ == "__main__":
    main()

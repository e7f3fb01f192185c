#!/usr/bin/env python3
"""Where a turn's time goes on the sync SQL repository, by layer (cProfile, own time).

Runs ``--turns`` turns (``memory.get`` with a 20-message window + one
``add([user, answer])``, what the memory advisor does; ``--adds 2`` adds them one at a
time) under cProfile, on the sync repository or with ``--async`` the async one, and adds
up each function's own time into layers, by the module it lives in:

- ``validation``: conversation id and argument checks;
- ``messages``: message construction and pydantic validation;
- ``codec``: message <-> row (JSON encoding/decoding, search text, the batch rows);
- ``statements``: building and compiling SQLAlchemy constructs, the plans;
- ``sqlalchemy engine``: execution context, pool, results;
- ``driver``: the DBAPI driver's Python and C code, waiting excluded;
- ``server``: waiting for the server's answer (socket waits, psycopg's ``wait``, and sends,
  which wake the server's process; SQLite's own execution);
- ``memory layer``: chatmem's chat memory and tracing wrappers;
- ``other``: built-ins and the standard library, called from every layer.

cProfile slows Python code down more than C code, so the Python layers are overstated; the
split is for comparing layers and versions, not absolute times. Usage:

    python benchmarks/sql_profile.py --url postgresql://test:test@127.0.0.1:54329/testdb [--async]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

if __name__ == "__main__" and "--source" not in sys.argv:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]

_SQLITE_RUNS = ("execute", "executemany", "commit", "fetchall", "fetchone")
_WAITS = ("wait_c", "wait_select", "wait_epoll", "poll", "select", "recv_into", "recv", "sendall")
# (layer, substrings of the file path, function names), the first match wins.
_RULES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    # psycopg's C wait is not profiled apart: its time is the own time of Python's wait().
    # Sending wakes the server's process, which on a busy machine takes the sender's core:
    # the send is counted as the server's.
    ("server", ("psycopg/waiting",), (*_WAITS, "wait", "_send_query_prepared", "_execute_send")),
    # The async repository's event loop waiting for the socket (selectors, asyncio's run).
    ("server", ("selectors",), ("select", "_run_once")),
    ("validation", ("conversation_ids",), ("check_limit", "check_clock")),
    ("codec", ("/sql/_codec", "json"), ("encode_message", "decode_message", "searchable_text")),
    ("codec", (), ("_encodable", "dump_json", "validate_json", "to_json", "dumps", "loads")),
    ("messages", ("chatmem/messages", "pydantic"), ()),
    (
        "statements",
        ("/sql/_sync/plans", "/sql/_async/plans", "/sql/_statements", "sqlalchemy/sql"),
        (),
    ),
    ("statements", ("sqlalchemy/dialects", "sqlalchemy/util"), ()),
    ("sqlalchemy engine", ("sqlalchemy", "/sql/_sync/runner", "/sql/_async/runner"), ()),
    ("sqlalchemy engine", ("_deadline", "greenlet"), ()),
    ("driver", ("psycopg", "pymysql", "MySQLdb", "sqlite3", "aiomysql", "aiosqlite"), ()),
    ("event loop", ("asyncio",), ()),
    ("memory layer", ("chatmem/", "chatmem_repositories"), ()),
]


def _builtin_layer(function: str) -> str | None:
    """A built-in's layer, from its name: "<method 'recv_into' of '_socket.socket' objects>"."""
    if "sqlite3." in function and any(f"'{name}'" in function for name in _SQLITE_RUNS):
        return "server"  # sqlite3's C methods: the database engine runs in-process
    if any(f"'{name}'" in function or f".{name}>" in function for name in _WAITS):
        return "server"
    if any(name in function for name in ("psycopg", "pq", "mysql", "sqlite")):
        return "driver"
    return None


def layer(filename: str, function: str) -> str:
    """The layer of a function, from its file (or built-in name) and its name."""
    path = filename.replace("\\", "/")
    if path == "~":
        found = _builtin_layer(function)
        if found is not None:
            return found
    for name, paths, functions in _RULES:
        if function in functions or any(part in path for part in paths):
            return name
    return "other"


def _turn_messages(i: int, adds: int) -> list[list[Any]]:
    from chatmem import AssistantMessage, UserMessage

    pair = [UserMessage(f"q{i} {TEXT}"[:200]), AssistantMessage(TEXT)]
    return [pair] if adds == 1 else [[message] for message in pair]


def _profile_sync(url: str, turns: int, adds: int) -> tuple[cProfile.Profile, float]:
    from chatmem import MessageWindowChatMemory
    from chatmem_repositories import create_repository

    repository = create_repository(url, initialize_schema="always")
    memory = MessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4().hex[:8]}"
    try:
        for i in range(30):
            memory.get(cid)
            for messages in _turn_messages(i, adds):
                memory.add(cid, messages)
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        for i in range(turns):
            memory.get(cid)
            for messages in _turn_messages(i, adds):
                memory.add(cid, messages)
        profiler.disable()
        wall = time.perf_counter() - began
    finally:
        repository.delete_by_conversation_id(cid)
        repository.close()
    return profiler, wall


async def _profile_async(url: str, turns: int, adds: int) -> tuple[cProfile.Profile, float]:
    from chatmem import AsyncMessageWindowChatMemory
    from chatmem_repositories import create_async_repository

    repository = create_async_repository(url, initialize_schema="always")
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4().hex[:8]}"
    try:
        for i in range(30):
            await memory.get(cid)
            for messages in _turn_messages(i, adds):
                await memory.add(cid, messages)
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        for i in range(turns):
            await memory.get(cid)
            for messages in _turn_messages(i, adds):
                await memory.add(cid, messages)
        profiler.disable()
        wall = time.perf_counter() - began
    finally:
        await repository.delete_by_conversation_id(cid)
        await repository.aclose()
    return profiler, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--adds", type=int, choices=(1, 2), default=1, help="adds per turn")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async twin")
    parser.add_argument("--show-other", action="store_true", help="list the 'other' layer")
    parser.add_argument("--source", help="import chatmem from this tree (a before version)")
    args = parser.parse_args()
    if args.source:
        sys.path.insert(0, args.source)
    if args.use_async:
        profiler, wall = asyncio.run(_profile_async(args.url, args.turns, args.adds))
    else:
        profiler, wall = _profile_sync(args.url, args.turns, args.adds)
    from chatmem_repositories import redact_url

    totals: dict[str, float] = defaultdict(float)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (filename, _line, function), (_cc, _nc, own, _cum, _callers) in stats.items():
        totals[layer(filename, function)] += own
    whole = sum(totals.values())
    if args.show_other:
        others = [(v[2], k) for k, v in stats.items() if layer(k[0], k[2]) == "other"]
        for own, key in sorted(others, reverse=True)[:15]:
            print(f"  other: {own * 1000 / args.turns:.3f} ms/turn {key}")
    print(f"{redact_url(args.url)}: {args.turns} turns, {wall / args.turns * 1000:.3f} ms/turn")
    print(f"{'layer':<18} {'ms/turn':>8} {'share':>6}")
    for name, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        share = seconds / whole * 100
        print(f"{name:<18} {seconds / args.turns * 1000:>8.3f} {share:>5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where a turn's time goes on the sync SQL repository, by layer (cProfile, own time).

Runs ``--turns`` turns (``memory.get`` with a 20-message window + ``add(user)`` +
``add(assistant)``) under cProfile and adds up each function's own time into layers, by the
module it lives in:

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

    python benchmarks/sql_profile.py --url postgresql://test:test@127.0.0.1:54329/testdb
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

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
    ("validation", ("conversation_ids",), ("check_limit", "check_clock")),
    ("codec", ("/sql/_codec", "json"), ("encode_message", "decode_message", "searchable_text")),
    ("codec", (), ("_encodable", "dump_json", "validate_json", "to_json", "dumps", "loads")),
    ("messages", ("chatmem/messages", "pydantic"), ()),
    ("statements", ("/sql/_plans", "/sql/_statements", "sqlalchemy/sql"), ()),
    ("statements", ("sqlalchemy/dialects", "sqlalchemy/util"), ()),
    ("sqlalchemy engine", ("sqlalchemy", "/sql/_sync/runner", "_deadline"), ()),
    ("driver", ("psycopg", "pymysql", "MySQLdb", "sqlite3"), ()),
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--show-other", action="store_true", help="list the 'other' layer")
    parser.add_argument("--source", help="import chatmem from this tree (a before version)")
    args = parser.parse_args()
    if args.source:
        sys.path.insert(0, args.source)
    from chatmem import AssistantMessage, MessageWindowChatMemory, UserMessage
    from chatmem_repositories import create_repository, redact_url

    repository = create_repository(args.url, initialize_schema="always")
    memory = MessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4().hex[:8]}"
    try:
        for i in range(30):
            memory.get(cid)
            memory.add(cid, UserMessage(f"q{i} {TEXT}"[:200]))
            memory.add(cid, AssistantMessage(TEXT))
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        for i in range(args.turns):
            memory.get(cid)
            memory.add(cid, UserMessage(f"q{i} {TEXT}"[:200]))
            memory.add(cid, AssistantMessage(TEXT))
        profiler.disable()
        wall = time.perf_counter() - began
    finally:
        repository.delete_by_conversation_id(cid)
        repository.close()
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

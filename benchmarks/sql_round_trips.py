#!/usr/bin/env python3
"""Round trips per memory read and per append on a network SQL backend, counted by strace.

Every request a driver sends is one ``sendto``/``sendmsg`` system call on its socket (psycopg's
libpq, PyMySQL and aiomysql alike), and each waits for its answer, so sends count round trips,
whatever layer sent them (SQLAlchemy, the pool's reset, the driver itself). The script runs
itself under ``strace -f`` with 100 ``memory.get`` and then 100 ``memory.add([user,
answer])`` (the memory advisor's turn), after a warm-up, and prints sends per call and what
was sent for the first read and append. Needs strace. Usage:

    python benchmarks/sql_round_trips.py --url postgresql://test:test@127.0.0.1:54329/testdb
    python benchmarks/sql_round_trips.py --url mysql://... --async --source /path/to/old/tree
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

CALLS = 100
_SEND = re.compile(r'(?:sendto|sendmsg)\(\d+, (?:\{.*?iov_base=)?"(?P<data>(?:[^"\\]|\\.)*)"')


def _words(data: str) -> str:
    """The readable start of a request (a statement's first words), else its protocol tag."""
    found = re.search(r"[A-Z]{4,}[A-Z _=0-9]*", data)
    return found.group(0).strip()[:32] if found else f"({data[:1]}: prepared, binary)"


def _mark(directory: str, name: str) -> None:
    Path(directory, name).touch()  # an openat() in the trace: where a phase starts


def _child(url: str, use_async: bool, directory: str) -> None:
    from chatmem import (
        AssistantMessage,
        AsyncMessageWindowChatMemory,
        MessageWindowChatMemory,
        UserMessage,
    )
    from chatmem_repositories import create_async_repository, create_repository

    cid = f"round-trips-{uuid.uuid4().hex[:8]}"

    def pair() -> list[object]:
        return [UserMessage("q" * 200), AssistantMessage("a" * 200)]

    if not use_async:
        repository = create_repository(url, initialize_schema="always")
        memory = MessageWindowChatMemory(repository, max_messages=20)
        for _ in range(20):
            memory.get(cid)
            memory.add(cid, pair())  # type: ignore[arg-type]
        _mark(directory, "reads")
        for _ in range(CALLS):
            memory.get(cid)
        _mark(directory, "appends")
        for _ in range(CALLS):
            memory.add(cid, pair())  # type: ignore[arg-type]
        _mark(directory, "done")
        repository.delete_by_conversation_id(cid)
        repository.close()
        return

    async def run() -> None:
        repository = create_async_repository(url, initialize_schema="always")
        memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
        for _ in range(20):
            await memory.get(cid)
            await memory.add(cid, pair())  # type: ignore[arg-type]
        _mark(directory, "reads")
        for _ in range(CALLS):
            await memory.get(cid)
        _mark(directory, "appends")
        for _ in range(CALLS):
            await memory.add(cid, pair())  # type: ignore[arg-type]
        _mark(directory, "done")
        await repository.delete_by_conversation_id(cid)
        await repository.aclose()

    asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--source", help="import chatmem from this tree (an earlier version)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.source or str(Path(__file__).resolve().parent.parent)
    if args.child:
        sys.path.insert(0, root)
        _child(args.url, args.use_async, args.child)
        return 0
    with tempfile.TemporaryDirectory() as directory:
        trace = Path(directory, "trace")
        command = [sys.executable, __file__, "--url", args.url, "--child", directory]
        command += ["--async"] if args.use_async else []
        command += ["--source", args.source] if args.source else []
        strace = ["strace", "-f", "-qq", "-s", "48", "-e", "trace=sendto,sendmsg,openat"]
        subprocess.run([*strace, "-o", str(trace), *command], check=True, env=os.environ)
        lines = trace.read_text().splitlines()

    def at(name: str) -> int:
        return next(i for i, line in enumerate(lines) if f'/{name}"' in line)

    reads, appends, done = at("reads"), at("appends"), at("done")
    mode = "async" if args.use_async else "sync"
    print(f"{args.url.split('@')[-1]} ({mode}): round trips (sends) per call")
    for name, start, end in (("read", reads, appends), ("append", appends, done)):
        sends = [m["data"] for line in lines[start:end] if (m := _SEND.search(line))]
        shown = [_words(data) for data in sends[: round(len(sends) / CALLS)]]
        print(f"  {name:<7} {len(sends) / CALLS:5.2f}   first call sends: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

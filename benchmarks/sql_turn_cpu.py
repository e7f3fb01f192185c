#!/usr/bin/env python3
"""Where a PostgreSQL turn's time goes: client CPU, server CPU and wall time, three ways.

Interleaved in rounds, on one conversation of ``--length`` messages each:

- ``floor``: benchmarks/_floor_drivers.py's PostgreSQL floor (psycopg, a 4-column table,
  read the newest 20 + insert two, prepared);
- ``chatmem SQL``: chatmem's own two statements of a turn (the window read and the
  one-statement append, as the repository compiles them) on a dedicated psycopg connection,
  prepared: what chatmem's schema and SQL cost without any of chatmem's Python;
- ``chatmem``: ``memory.get`` + one ``memory.add([user, answer])`` on the sync repository.

Each reports, per turn, wall time, this process's CPU time and the CPU time of the server
backend(s) serving it (read from /proc, so the server must run on this machine). CPU times
hardly change with a shared machine's load; wall time does. ``--source DIR`` imports chatmem
from another tree (an earlier version; its turn is then compared with the floor only), so
versions can be run alternately. Usage:

    python benchmarks/sql_turn_cpu.py --url postgresql://test:test@127.0.0.1:54329/testdb
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if "--source" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--source") + 1])
else:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _floor_drivers import TEXT, PostgresFloor
from _measure import process_cpu
from sqlalchemy import event

from chatmem import AssistantMessage, MessageWindowChatMemory, UserMessage
from chatmem_repositories import create_repository, redact_url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a postgresql:// URL")
    parser.add_argument("--length", type=int, default=10, help="stored messages")
    parser.add_argument("--turns", type=int, default=200, help="turns per round and way")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--source", help="import chatmem from this tree (an earlier version)")
    args = parser.parse_args()
    repository = create_repository(args.url, initialize_schema="always")
    engine: Any = repository._engine  # type: ignore[attr-defined]
    pids: list[int] = []
    event.listen(engine, "connect", lambda dbapi, _record: pids.append(dbapi.info.backend_pid))
    memory = MessageWindowChatMemory(repository, max_messages=20)
    tag = uuid.uuid4().hex[:8]
    cid, raw_cid, floor_cid = f"cpu-{tag}", f"cpu-raw-{tag}", f"cpu-floor-{tag}"
    history = [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
        for i in range(args.length)
    ]
    repository.append(cid, history)
    repository.append(raw_cid, [m.model_copy(update={"id": f"{m.id}-raw"}) for m in history])

    floor = PostgresFloor(args.url)
    floor.fill(floor_cid, args.length)
    floor_pid = floor.conn.info.backend_pid

    ways: dict[str, tuple[Callable[[], None], Callable[[], list[int]]]] = {
        "floor": (lambda: floor.turn(floor_cid), lambda: [floor_pid]),
    }
    raw: Any = None
    if args.source is None:
        raw, raw_turn, raw_pid = _chatmem_sql(args.url, repository, raw_cid)
        ways["chatmem SQL"] = (raw_turn, lambda: [raw_pid])

    def chatmem_turn() -> None:
        memory.get(cid)
        memory.add(cid, [UserMessage(TEXT), AssistantMessage(TEXT)])

    ways["chatmem"] = (chatmem_turn, lambda: pids)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
    try:
        for turn, _ in ways.values():
            for _ in range(30):
                turn()  # warm up: connections, prepared statements
        for _ in range(args.rounds):
            for name, (turn, backends) in ways.items():
                server, client = process_cpu(backends()), time.process_time()
                began = time.perf_counter()
                for _ in range(args.turns):
                    turn()
                wall = time.perf_counter() - began
                client = time.process_time() - client
                server = process_cpu(backends()) - server
                results[name].append((wall, client, server))
    finally:
        repository.delete_by_conversation_id(cid)
        repository.delete_by_conversation_id(raw_cid)
        if raw is not None:
            raw.close()
        floor.close()
        repository.close()
    print(
        f"{redact_url(args.url)}: {args.length} stored, {args.rounds} x {args.turns} turns, "
        f"load {[round(x, 2) for x in os.getloadavg()]}"
    )
    print(f"{'per turn (median)':<18} {'wall us':>8} {'client CPU us':>14} {'server CPU us':>14}")
    for name, rows in results.items():
        wall, client, server = (
            statistics.median(row[i] for row in rows) / args.turns * 1e6 for i in range(3)
        )
        print(f"{name:<18} {wall:>8.0f} {client:>14.0f} {server:>14.0f}")
    return 0


def _chatmem_sql(url: str, repository: Any, cid: str) -> tuple[Any, Callable[[], None], int]:
    """A bare psycopg connection running chatmem's two statements of a turn, compiled."""
    import psycopg

    from chatmem_repositories.sql._codec import Batch
    from chatmem_repositories.sql._compiled import compile_for_driver
    from chatmem_repositories.sql._sync.plans.postgresql import _params

    plan, dialect = repository._plan, repository._engine.dialect
    read_sql = compile_for_driver(plan.reads.window_and_system(), dialect)
    append_sql = compile_for_driver(plan._append_statement(), dialect)
    assert read_sql is not None
    assert append_sql is not None
    raw = psycopg.connect(**_conninfo(url), autocommit=True)

    def raw_turn() -> None:
        now = datetime.now(UTC)
        params = {"cid": cid, "limit": 20, "now": now}
        raw.execute(read_sql.text, read_sql.bind(params), prepare=True).fetchall()
        batch = Batch([UserMessage(TEXT), AssistantMessage(TEXT)])
        bound = append_sql.bind(_params(cid, batch, now, None))
        raw.execute(append_sql.text, bound, prepare=True).fetchall()

    return raw, raw_turn, raw.info.backend_pid


def _conninfo(url: str) -> dict[str, Any]:
    from _floor_drivers import _sql_parts

    parts = _sql_parts(url)
    return {**parts, "port": parts["port"] or 5432}


if __name__ == "__main__":
    sys.exit(main())

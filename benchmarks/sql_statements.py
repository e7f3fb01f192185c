#!/usr/bin/env python3
"""Count SQL statements and DBAPI round trips per memory read and per append.

Counts the statements SQLAlchemy sends (``before_cursor_execute``) and shows SQLAlchemy's
transaction markers beside them. A write's commit is one more round trip; psycopg also
sends BEGIN as its own round trip, while pymysql and sqlite3 do not. On PostgreSQL the
turn's read and append go to psycopg's cursor without SQLAlchemy and are not counted here;
benchmarks/sql_round_trips.py counts what every layer sends, on any network backend.

Usage:
    python benchmarks/sql_statements.py --url sqlite:////tmp/chat.db
    python benchmarks/sql_statements.py --url postgresql+psycopg://test:test@127.0.0.1:54329/testdb
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event

from chatmem import AssistantMessage, MessageWindowChatMemory, SystemMessage, UserMessage
from chatmem_repositories import redact_url
from chatmem_repositories.sql import SqlChatMemoryRepository


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--history", type=int, default=1000, help="messages stored first")
    args = parser.parse_args()
    repository = SqlChatMemoryRepository.from_url(
        args.url, initialize_schema="always", table_prefix="chatmem_bench_"
    )
    calls: list[str] = []

    def statement(_c: Any, _cur: Any, sql: str, *_rest: Any) -> None:
        calls.append(sql.split(None, 1)[0].upper())

    engine = repository._engine
    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "begin", lambda _c: calls.append("(begin)"))
    event.listen(engine, "commit", lambda _c: calls.append("(commit)"))
    try:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        cid = f"bench-{uuid.uuid4()}"
        memory.add(cid, SystemMessage("be brief"))
        batch = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"message {i}")
            for i in range(args.history)
        ]
        for start in range(0, len(batch), 500):
            repository.append(cid, batch[start : start + 500])
        steps = {
            "memory read (MessageWindowChatMemory.get)": lambda: memory.get(cid),
            "append one message (ChatMemory.add)": lambda: memory.add(cid, UserMessage("next")),
            "append with a system message": lambda: repository.append(
                cid, [SystemMessage("be briefer"), UserMessage("again")]
            ),
        }
        print(
            f"{redact_url(args.url)} ({repository.server_version()}, plan "
            f"{type(repository._plan).__name__}), {args.history} messages stored"
        )
        for name, step in steps.items():
            calls.clear()
            step()
            sql = [c for c in calls if not c.startswith("(")]
            print(f"  {name}: {len(sql)} statements {sql}; with transaction markers {calls}")
        repository.delete_by_conversation_id(cid)
    finally:
        repository.close()


if __name__ == "__main__":
    main()

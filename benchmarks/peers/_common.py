"""What every peer shares: the messages of a turn, conversation ids and store URLs."""

from __future__ import annotations

import uuid
from pathlib import Path

__all__ = [
    "BATCH",
    "WINDOW",
    "answer",
    "conversation_id",
    "libpq_url",
    "question",
    "sqlalchemy_url",
    "sqlite_path",
]

# Messages a windowed memory reads per turn: chatmem's MessageWindowChatMemory default, and the
# limit the Agents SDK's Runner passes to get_items once a session limit is set.
WINDOW = 20
# Messages per write when seeding through a library's batch API.
BATCH = 1000


def question(i: int) -> str:
    """The user's message of turn ``i`` (about 100 characters, as in the other benchmarks)."""
    return f"question {i}: " + "lorem ipsum " * 8


def answer(i: int) -> str:
    """The assistant's answer of turn ``i``."""
    return f"answer {i}: " + "dolor sit amet " * 8


def conversation_id() -> str:
    """A new conversation id no other run uses (its data is deleted on close)."""
    return f"peers-{uuid.uuid4().hex}"


def sqlite_path(url: str, peer: str) -> Path:
    """The SQLite file of ``peer``: next to the file ``url`` names, one file per peer.

    Each peer gets its own file, so no peer waits on another's write lock.
    """
    path = Path(url.split("?", 1)[0].removeprefix("sqlite:///"))
    return path.with_name(f"{path.stem}-{peer}{path.suffix or '.db'}")


def sqlalchemy_url(url: str, driver: str) -> str:
    """``url`` (a chatmem URL of a SQL server) with SQLAlchemy's ``driver`` for its dialect.

    chatmem's own query options (``initialize_schema``...) are dropped; others are kept.
    """
    scheme, rest = url.split("://", 1)
    base, _, query = rest.partition("?")
    kept = [p for p in query.split("&") if p and not p.startswith("initialize_schema")]
    dialect = scheme.split("+")[0]
    return f"{dialect}+{driver}://{base}" + (f"?{'&'.join(kept)}" if kept else "")


def libpq_url(url: str) -> str:
    """``url`` (a SQLAlchemy PostgreSQL URL) as libpq reads it: ``postgresql://...``."""
    return "postgresql://" + sqlalchemy_url(url, "x").split("://", 1)[1]

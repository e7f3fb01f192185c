"""Options of the SQL repository (no I/O)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chatmem_repositories._options import Duration
from chatmem_repositories.sql._schema import check_table_prefix

__all__ = ["SqlOptions"]


class SqlOptions(BaseModel):
    """Options accepted by ``from_url`` (as keywords or URL query parameters)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttl: Duration | None = None
    """Expire a conversation this long after its last write; ``None`` keeps it forever."""
    table_prefix: str = "chatmem_"
    """Prefix of the two table names (a letter, then letters, digits or underscores)."""
    initialize_schema: Literal["embedded", "always", "never"] = "embedded"
    """Create missing tables: only for embedded databases (SQLite), always, or never."""
    connect_timeout: Duration = timedelta(seconds=10)
    """How long to wait for a connection (or for a free one from the pool)."""
    read_timeout: Duration = timedelta(seconds=30)
    """How long to wait for the answer to one statement or commit. Past it, the connection
    is closed and ``RepositoryTimeoutError`` raised (``RepositoryWriteTimeoutError`` for a
    write that may have been applied). Applies to PostgreSQL and MySQL/MariaDB; SQLite
    waits for its file lock instead (30 s)."""
    pool_size: int = Field(default=5, ge=1)
    """Connections kept open by a repository that owns its engine."""
    max_overflow: int = Field(default=20, ge=0)
    """Extra connections opened under load beyond ``pool_size``."""

    pool_pre_ping: bool = False
    """Test every pooled connection before use. Off by default: it costs a round trip per
    call, and the repository instead retries once on a connection the server dropped."""

    @field_validator("table_prefix")
    @classmethod
    def _valid_prefix(cls, value: str) -> str:
        return check_table_prefix(value)

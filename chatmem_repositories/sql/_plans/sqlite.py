"""SQLite's plan: the upsert-and-``RETURNING`` append in a transaction (SQLite 3.35+)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, text
from sqlalchemy.dialects import sqlite

from chatmem_repositories.sql._plans.returning import ReturningPlan
from chatmem_repositories.sql._plans.steps import Program, Query

__all__ = ["SqlitePlan"]


class SqlitePlan(ReturningPlan):
    """Every operation on SQLite.

    An append is one transaction of two statements (upsert, insert) plus its commit. Every
    write transaction starts with a write, so it never has to upgrade a read lock.
    """

    @property
    def db_system(self) -> str:
        """``"sqlite"``."""
        return "sqlite"

    def server_version(self) -> Program[str]:
        """``SQLite 3.x.y``, the library the driver runs."""
        rows = yield Query(text("SELECT sqlite_version()"))
        return f"SQLite {rows[0][0]}"

    def dialect_insert(self, table: Table) -> Any:
        """SQLite's ``INSERT`` with ``ON CONFLICT``."""
        return sqlite.insert(table)

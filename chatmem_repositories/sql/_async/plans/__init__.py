"""One plan per dialect: every operation of the SQL repository as a program of steps.

| dialect | plan | an append (no system message) |
| --- | --- | --- |
| PostgreSQL | :class:`AsyncPostgresqlPlan` | one statement in autocommit |
| SQLite | :class:`AsyncSqlitePlan` | upsert, insert, commit |
| MySQL, MariaDB | :class:`AsyncMysqlPlan` | upsert, insert, commit: one statement list if it can |
| any other | :class:`AsyncPlan` | update (else insert), locked counter, ids, insert, commit |
"""

from __future__ import annotations

from sqlalchemy.engine import Dialect

from chatmem_repositories.sql._async.plans.base import AsyncPlan
from chatmem_repositories.sql._async.plans.mysql import AsyncMysqlPlan
from chatmem_repositories.sql._async.plans.postgresql import AsyncPostgresqlPlan
from chatmem_repositories.sql._async.plans.sqlite import AsyncSqlitePlan
from chatmem_repositories.sql._async.runner import AsyncRunner
from chatmem_repositories.sql._schema import Tables

__all__ = ["AsyncMysqlPlan", "AsyncPlan", "AsyncPostgresqlPlan", "AsyncSqlitePlan", "plan_for"]

_PLANS: dict[str, type[AsyncPlan]] = {
    "postgresql": AsyncPostgresqlPlan,
    "sqlite": AsyncSqlitePlan,
    "mysql": AsyncMysqlPlan,
    "mariadb": AsyncMysqlPlan,
}


def plan_for(tables: Tables, dialect: Dialect, runner: AsyncRunner) -> AsyncPlan:
    """Return the plan for ``dialect``: its own, or the portable :class:`AsyncPlan`."""
    return _PLANS.get(dialect.name, AsyncPlan)(tables, dialect, runner)

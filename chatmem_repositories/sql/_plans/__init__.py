"""One plan per dialect: every operation of the SQL repository as a program of steps.

| dialect | plan | an append (no system message) |
| --- | --- | --- |
| PostgreSQL | :class:`PostgresqlPlan` | one statement in autocommit |
| SQLite | :class:`SqlitePlan` | upsert ``RETURNING``, insert ``RETURNING``, commit |
| MySQL, MariaDB | :class:`MysqlPlan` | upsert, counter and stored ids, insert, commit |
| any other | :class:`Plan` | update (else insert), locked counter, ids, insert, commit |
"""

from __future__ import annotations

from sqlalchemy.engine import Dialect

from chatmem_repositories.sql._plans.base import Plan
from chatmem_repositories.sql._plans.mysql import MysqlPlan
from chatmem_repositories.sql._plans.postgresql import PostgresqlPlan
from chatmem_repositories.sql._plans.sqlite import SqlitePlan
from chatmem_repositories.sql._schema import Tables

__all__ = ["MysqlPlan", "Plan", "PostgresqlPlan", "SqlitePlan", "plan_for"]

_PLANS: dict[str, type[Plan]] = {
    "postgresql": PostgresqlPlan,
    "sqlite": SqlitePlan,
    "mysql": MysqlPlan,
    "mariadb": MysqlPlan,
}


def plan_for(tables: Tables, dialect: Dialect) -> Plan:
    """Return the plan for ``dialect``: its own, or the portable :class:`Plan`."""
    return _PLANS.get(dialect.name, Plan)(tables, dialect)

"""A PostgreSQL schema of a peer's own, for libraries whose table names cannot be chosen."""

from __future__ import annotations

import uuid

import psycopg

from benchmarks.peers._common import libpq_url

__all__ = ["create_schema", "drop_schema", "new_schema"]


def new_schema(library: str) -> str:
    """A schema name no other run uses."""
    return f"peers_{library}_{uuid.uuid4().hex[:8]}"


async def create_schema(url: str, schema: str) -> None:
    """Create ``schema`` on the server at ``url`` (a SQLAlchemy or libpq URL)."""
    async with await psycopg.AsyncConnection.connect(libpq_url(url), autocommit=True) as conn:
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


async def drop_schema(url: str, schema: str) -> None:
    """Drop ``schema`` and everything in it."""
    async with await psycopg.AsyncConnection.connect(libpq_url(url), autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

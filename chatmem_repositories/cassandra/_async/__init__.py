# ruff: noqa: E501, RUF100  (the generated twin's first line names this path and is long)
"""Async Cassandra repository (the sync twin in ``_sync`` is generated from it)."""

"""Async implementations; the sync twins in ``_sync`` are generated from these."""

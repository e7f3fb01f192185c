"""Async implementations; the sync twins in ``chatmem._sync`` are generated from these."""

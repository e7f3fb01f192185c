"""Async Redis repository (source of the generated sync twin)."""

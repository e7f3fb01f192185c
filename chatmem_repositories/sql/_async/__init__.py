"""Async SQL repository (source of the generated sync twin)."""

"""How many examples the property tests draw: every one in the main run, fewer elsewhere.

The main run of the test command draws each property test's full count. The runs on the other
Pythons the package claims (``scripts/test-pythons``) check that the same properties hold on
those interpreters and draw a share of it, ``CHATMEM_PROPERTY_SCALE`` (0.25 there): the same
strategies and code paths, at a quarter of the cost (the property tests take about a third of
a run without servers).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

__all__ = ["SCALE", "examples", "property_settings", "share_from"]


def share_from(raw: str) -> float:
    """Parse a ``CHATMEM_PROPERTY_SCALE`` value: a number in (0, 1].

    Raises:
        ValueError: If it is not one.
    """
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value <= 1:
        raise ValueError(f"CHATMEM_PROPERTY_SCALE must be a number in (0, 1], got {raw!r}")
    return value


SCALE = share_from(os.environ.get("CHATMEM_PROPERTY_SCALE", "1"))
"""The share of each property test's examples this run draws (1 unless set)."""


def examples(count: int, scale: float = SCALE) -> int:
    """Return how many of ``count`` examples a run at ``scale`` draws (at least 10)."""
    return max(10, round(count * scale))


def property_settings(count: int, **options: Any) -> settings:
    """Return Hypothesis settings drawing :func:`examples` of ``count``, plus ``options``."""
    return settings(max_examples=examples(count), **options)

r"""Quoting untrusted text into a prompt section: one JSON line, angle brackets escaped.

Stored text (past messages, summaries derived from them) may contain anything, including a
section's own markers. Rendered by :func:`quote_json_line`, it becomes a single line of JSON
with every ``<`` and ``>`` written as ``\u003c``/``\u003e`` and every newline as ``\n``: it
can neither close a section whose markers contain ``<<<`` and ``>>>`` nor start a line of
its own, so it reaches the model as a quoted string whatever it says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["quote_json_line"]


def quote_json_line(entry: Mapping[str, Any]) -> str:
    """Return ``entry`` as one line of JSON that cannot contain ``<`` or ``>``.

    Args:
        entry: JSON-serializable fields.
    """
    text = json.dumps(entry, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e")

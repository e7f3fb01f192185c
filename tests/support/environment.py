"""A test's process environment without the machine's chatmem settings, and with the run's.

Tests of settings, the command line and the examples start from no ``CHATMEM_*`` (and no
``OPENAI_*``) variable, so that what the machine has set changes nothing. The variables of the
test run itself stay: the servers' URLs (``CHATMEM_TEST_*``, the shard among them) and
``CHATMEM_SKIP_SERVERS``, so a test that reaches a server afterwards still reaches the run's
server, or skips as the run asks; no chatmem setting starts with those names.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["RUN_VARIABLES", "clear_settings"]

RUN_VARIABLES = ("CHATMEM_TEST_", "CHATMEM_SKIP_SERVERS")
"""Prefixes of the test run's own variables, which :func:`clear_settings` keeps."""


def clear_settings(
    monkeypatch: pytest.MonkeyPatch, prefixes: tuple[str, ...] = ("CHATMEM_", "OPENAI_")
) -> None:
    """Remove every variable starting with one of ``prefixes`` but the run's own, for one test."""
    for name in list(os.environ):
        if name.startswith(prefixes) and not name.startswith(RUN_VARIABLES):
            monkeypatch.delenv(name)

"""The history checker as a conformance test: subclass it next to the conformance suite.

Example:
    ```python
    class TestMyBackend(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
        @pytest.fixture
        def repository_factory(self):
            async def factory(**options):
                return AsyncMyRepository(url, **options)
            return factory
    ```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

import pytest

from chatmem._async.repository import AsyncChatMemoryLog
from chatmem.testing._async.history_checker import AsyncHistoryChecker
from chatmem.testing._clock import ManualClock
from chatmem.testing._schedule import CheckerSettings

__all__ = ["AsyncHistoryCheckerConformance"]

Factory = Callable[..., Awaitable[AsyncChatMemoryLog]]


class AsyncHistoryCheckerConformance:
    """Concurrent calls, recorded and checked. Subclass and provide ``repository_factory``.

    The same fixture as :class:`AsyncRepositoryConformance`: a callable taking repository
    options (``ttl`` here) and returning a new repository. A failure prints the seed; set
    ``CHATMEM_CHECKER_SEED`` to replay its schedule.

    The workers make version-checked appends too (``find_version``, then ``append`` with
    ``expected_version``), so the repository must be a
    :class:`~chatmem.repository.AsyncSessionLog`, as the conformance suite requires; the
    report printed counts how many won and how many were refused.
    """

    checker_ttl_seconds: ClassVar[float | None] = 1.0
    """Time to live the checked repository is created with; ``None`` if the store has none."""
    checker_expiry_pause: ClassVar[float | None] = None
    """Idle seconds between cycles, enough for the store to expire a conversation whose time
    to live is ``checker_ttl_seconds``; default ``1.1 * ttl + 0.1``."""
    checker_expiry_slack: ClassVar[float] = 0.05
    """How much earlier than its time to live the store may expire a conversation."""
    checker_settings: ClassVar[CheckerSettings] = CheckerSettings()
    """Size of the run."""
    supports_clock: ClassVar[bool] = False
    """True when ``repository_factory(clock=...)`` makes a repository that reads the time from
    ``clock`` for every expiry decision (the same switch as the repository conformance
    suite's): the checker then advances a :class:`~chatmem.testing.ManualClock` over its
    pauses between cycles instead of sleeping through them."""

    @pytest.mark.asyncio
    async def test_concurrent_history_is_consistent(self, repository_factory: Factory) -> None:
        checker = AsyncHistoryChecker(
            repository_factory,
            ttl=self.checker_ttl_seconds,
            expiry_pause=self.checker_expiry_pause,
            expiry_slack=self.checker_expiry_slack,
            settings=self.checker_settings,
            clock=ManualClock() if self.supports_clock else None,
        )
        report = await checker.run()
        print(f"history checker: {report.summary()}")  # shown with pytest -s or -rP
        assert sum(report.version_checked.values()) > 0, "no version-checked append was made"

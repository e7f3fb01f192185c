"""Test helpers shipped with chatmem: the repository conformance suite and sample data.

Third-party backends run the same suite as the built-in ones::

    from chatmem.testing import RepositoryConformance

    class TestMyRepository(RepositoryConformance):
        @pytest.fixture
        def repository_factory(self):
            return lambda **options: MyRepository(url, **options)

The concurrent history checker runs there too: inherit
:class:`HistoryCheckerConformance` as well, with the same fixture. Workers make seeded random
concurrent calls, every call is recorded with its interval and outcome, and
:func:`check_history` proves from the history that no acknowledged append was lost, no batch
was torn, no message duplicated or reordered, no read saw the future, and no version-checked
append won where another append had moved the version or stored what it was refused. A
failure names the seed; ``CHATMEM_CHECKER_SEED`` replays the schedule (see docs/testing.md).

A repository that keeps summaries (:class:`~chatmem.repository.SummaryStore`) also inherits
:class:`SummaryConformance` (same fixture): the version-checked write, concurrent writers,
and two summarizing memories serving one conversation.

A repository that takes ``clock=`` is tested for expiry without sleeping: set
``supports_clock = True`` on the test class, and the suite passes a :class:`ManualClock` and
advances it over the time to live.

The suites need pytest (and pytest-asyncio for the async variant); they are imported on first
use, so the scripted model, the history checker and the test servers work without pytest.
"""

from typing import TYPE_CHECKING, Any

from chatmem.testing._async.history_checker import AsyncHistoryChecker
from chatmem.testing._async.scripted import AsyncScriptedChatModel, ScriptedReply
from chatmem.testing._checker import Anomaly, find_anomalies
from chatmem.testing._clock import ManualClock
from chatmem.testing._history import History, HistoryReport, Operation, Outcome
from chatmem.testing._report import HistoryCheckError, check_history
from chatmem.testing._samples import (
    HOSTILE_CONVERSATION_IDS,
    PREVIOUS_CODEC_RECORD,
    every_kind_of_message,
    reasoning_turns,
    tool_turn,
)
from chatmem.testing._schedule import CheckerSettings
from chatmem.testing._summarizer import folding_summarizer
from chatmem.testing._sync.history_checker import HistoryChecker
from chatmem.testing._sync.scripted import ScriptedChatModel
from chatmem.testing.anthropic_server import AnthropicTestServer, ScriptedMessage
from chatmem.testing.openai_server import OpenAITestServer, ScriptedCompletion
from chatmem.testing.responses_protocol import ScriptedResponse

if TYPE_CHECKING:
    from chatmem.testing._async.conformance import AsyncRepositoryConformance
    from chatmem.testing._async.history_conformance import AsyncHistoryCheckerConformance
    from chatmem.testing._async.summary_conformance import AsyncSummaryConformance
    from chatmem.testing._sync.conformance import RepositoryConformance
    from chatmem.testing._sync.history_conformance import HistoryCheckerConformance
    from chatmem.testing._sync.summary_conformance import SummaryConformance

# Names whose modules import pytest: loaded on first access only.
_NEEDS_PYTEST = {
    "AsyncRepositoryConformance": "chatmem.testing._async.conformance",
    "RepositoryConformance": "chatmem.testing._sync.conformance",
    "AsyncHistoryCheckerConformance": "chatmem.testing._async.history_conformance",
    "HistoryCheckerConformance": "chatmem.testing._sync.history_conformance",
    "AsyncSummaryConformance": "chatmem.testing._async.summary_conformance",
    "SummaryConformance": "chatmem.testing._sync.summary_conformance",
}


def __getattr__(name: str) -> Any:
    module = _NEEDS_PYTEST.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "HOSTILE_CONVERSATION_IDS",
    "PREVIOUS_CODEC_RECORD",
    "Anomaly",
    "AnthropicTestServer",
    "AsyncHistoryChecker",
    "AsyncHistoryCheckerConformance",
    "AsyncRepositoryConformance",
    "AsyncScriptedChatModel",
    "AsyncSummaryConformance",
    "CheckerSettings",
    "History",
    "HistoryCheckError",
    "HistoryChecker",
    "HistoryCheckerConformance",
    "HistoryReport",
    "ManualClock",
    "OpenAITestServer",
    "Operation",
    "Outcome",
    "RepositoryConformance",
    "ScriptedChatModel",
    "ScriptedCompletion",
    "ScriptedMessage",
    "ScriptedReply",
    "ScriptedResponse",
    "SummaryConformance",
    "check_history",
    "every_kind_of_message",
    "find_anomalies",
    "folding_summarizer",
    "reasoning_turns",
    "tool_turn",
]

"""Test helpers shipped with chatmem: the repository conformance suite and sample data.

Third-party backends run the same suite as the built-in ones::

    from chatmem.testing import RepositoryConformance

    class TestMyRepository(RepositoryConformance):
        @pytest.fixture
        def repository_factory(self):
            return lambda **options: MyRepository(url, **options)

The suite needs pytest (and pytest-asyncio for the async variant); it is imported on first
use, so the scripted model and the test server work without pytest installed.
"""

from typing import TYPE_CHECKING, Any

from chatmem.testing._async.scripted import AsyncScriptedChatModel, ScriptedReply
from chatmem.testing._samples import HOSTILE_CONVERSATION_IDS, every_kind_of_message, tool_turn
from chatmem.testing._sync.scripted import ScriptedChatModel
from chatmem.testing.openai_server import OpenAITestServer, ScriptedCompletion

if TYPE_CHECKING:
    from chatmem.testing._async.conformance import AsyncRepositoryConformance
    from chatmem.testing._sync.conformance import RepositoryConformance

# Names whose modules import pytest: loaded on first access only.
_NEEDS_PYTEST = {
    "AsyncRepositoryConformance": "chatmem.testing._async.conformance",
    "RepositoryConformance": "chatmem.testing._sync.conformance",
}


def __getattr__(name: str) -> Any:
    module = _NEEDS_PYTEST.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "HOSTILE_CONVERSATION_IDS",
    "AsyncRepositoryConformance",
    "AsyncScriptedChatModel",
    "OpenAITestServer",
    "RepositoryConformance",
    "ScriptedChatModel",
    "ScriptedCompletion",
    "ScriptedReply",
    "every_kind_of_message",
    "tool_turn",
]

"""Test helpers shipped with chatmem: the repository conformance suite and sample data.

Third-party backends run the same suite as the built-in ones::

    from chatmem.testing import RepositoryConformance

    class TestMyRepository(RepositoryConformance):
        @pytest.fixture
        def repository_factory(self):
            return lambda **options: MyRepository(url, **options)

The suite needs pytest (and pytest-asyncio for the async variant).
"""

from chatmem.testing._async.conformance import AsyncRepositoryConformance
from chatmem.testing._async.scripted import AsyncScriptedChatModel, ScriptedReply
from chatmem.testing._samples import HOSTILE_CONVERSATION_IDS, every_kind_of_message, tool_turn
from chatmem.testing._sync.conformance import RepositoryConformance
from chatmem.testing._sync.scripted import ScriptedChatModel
from chatmem.testing.openai_server import OpenAITestServer, ScriptedCompletion

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

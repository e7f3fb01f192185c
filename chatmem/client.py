"""The chat client and the advisor API, sync and async.

Example:
    ```python
    client = (ChatClient.builder(model)
              .default_system("You are a helpful assistant.")
              .default_advisors(MessageChatMemoryAdvisor(memory))
              .build())
    client.prompt().user("My name is James Bond").advisors({CONVERSATION_ID: "007"}).call()
    ```
"""

from __future__ import annotations

from chatmem._async.advisors import (
    AsyncAdvisorChain,
    AsyncBaseAdvisor,
    AsyncCallAdvisor,
    AsyncChainTerminal,
    AsyncStreamAdvisor,
)
from chatmem._async.client import (
    AsyncCallResponseSpec,
    AsyncChatClient,
    AsyncChatClientBuilder,
    AsyncChatClientRequestSpec,
    AsyncStreamResponseSpec,
)
from chatmem._async.model import AsyncChatModel
from chatmem._sync.advisors import (
    AdvisorChain,
    BaseAdvisor,
    CallAdvisor,
    ChainTerminal,
    StreamAdvisor,
)
from chatmem._sync.client import (
    CallResponseSpec,
    ChatClient,
    ChatClientBuilder,
    ChatClientRequestSpec,
    StreamResponseSpec,
)
from chatmem._sync.model import ChatModel
from chatmem.advisor import (
    DEFAULT_CHAT_MEMORY_ORDER,
    HIGHEST_PRECEDENCE,
    LOWEST_PRECEDENCE,
    AdvisorParams,
    ChatClientRequest,
    ChatClientResponse,
    PureAdvisor,
)

__all__ = [
    "DEFAULT_CHAT_MEMORY_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOWEST_PRECEDENCE",
    "AdvisorChain",
    "AdvisorParams",
    "AsyncAdvisorChain",
    "AsyncBaseAdvisor",
    "AsyncCallAdvisor",
    "AsyncCallResponseSpec",
    "AsyncChainTerminal",
    "AsyncChatClient",
    "AsyncChatClientBuilder",
    "AsyncChatClientRequestSpec",
    "AsyncChatModel",
    "AsyncStreamAdvisor",
    "AsyncStreamResponseSpec",
    "BaseAdvisor",
    "CallAdvisor",
    "CallResponseSpec",
    "ChainTerminal",
    "ChatClient",
    "ChatClientBuilder",
    "ChatClientRequest",
    "ChatClientRequestSpec",
    "ChatClientResponse",
    "ChatModel",
    "PureAdvisor",
    "StreamAdvisor",
    "StreamResponseSpec",
]

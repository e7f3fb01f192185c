"""chatmem: conversation memory for LLM applications.

Memory (what the model sees) is derived from a lossless, append-only history kept in the
repository of your choice. Importing chatmem imports no database driver and no model SDK.

Example:
    ```python
    from chatmem import MessageWindowChatMemory, UserMessage, AssistantMessage

    memory = MessageWindowChatMemory(max_messages=20)
    memory.add("007", UserMessage("My name is James Bond"))
    memory.add("007", AssistantMessage("Hello, Mr Bond."))
    memory.get("007")
    ```
"""

from chatmem._version import __version__
from chatmem.advisor import DEFAULT_CHAT_MEMORY_ORDER, HIGHEST_PRECEDENCE, LOWEST_PRECEDENCE
from chatmem.client import (
    AdvisorChain,
    AdvisorParams,
    AsyncAdvisorChain,
    AsyncBaseAdvisor,
    AsyncCallAdvisor,
    AsyncChatClient,
    AsyncChatModel,
    AsyncStreamAdvisor,
    BaseAdvisor,
    CallAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ChatModel,
    StreamAdvisor,
)
from chatmem.conversation_ids import (
    MAX_CONVERSATION_ID_LENGTH,
    owner_of,
    scoped_conversation_id,
    split_conversation_id,
    validate_conversation_id,
)
from chatmem.exceptions import (
    AdvisorError,
    ChatMemError,
    ChatModelError,
    ChatModelHTTPError,
    ChatModelResponseError,
    ConfigurationError,
    InvalidConversationIdError,
    MessageDecodeError,
    MissingConversationIdError,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)
from chatmem.memory import (
    CONVERSATION_ID,
    AsyncChatMemory,
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
    ChatMemory,
    MessageWindowChatMemory,
    TokenWindowChatMemory,
)
from chatmem.messages import (
    AssistantMessage,
    Media,
    Message,
    MessageType,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
)
from chatmem.model import (
    ChatModelConnectionError,
    ChatModelTimeoutError,
    ChatOptions,
    ChatResponse,
    Generation,
    Prompt,
    ToolDefinition,
    Usage,
)
from chatmem.repository import (
    AsyncChatMemoryLog,
    AsyncChatMemoryRepository,
    AsyncInMemoryChatMemoryRepository,
    ChatMemoryLog,
    ChatMemoryRepository,
    ConversationPage,
    InMemoryChatMemoryRepository,
    Position,
    StoredMessage,
)
from chatmem.tokens import (
    CharacterTokenEstimator,
    TiktokenTokenEstimator,
    TokenEstimator,
)
from chatmem.tools import Tool, ToolExecutionError, ToolIterationLimitError, tool

__all__ = [
    "CONVERSATION_ID",
    "DEFAULT_CHAT_MEMORY_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOWEST_PRECEDENCE",
    "MAX_CONVERSATION_ID_LENGTH",
    "AdvisorChain",
    "AdvisorError",
    "AdvisorParams",
    "AssistantMessage",
    "AsyncAdvisorChain",
    "AsyncBaseAdvisor",
    "AsyncCallAdvisor",
    "AsyncChatClient",
    "AsyncChatMemory",
    "AsyncChatMemoryLog",
    "AsyncChatMemoryRepository",
    "AsyncChatModel",
    "AsyncInMemoryChatMemoryRepository",
    "AsyncMessageWindowChatMemory",
    "AsyncStreamAdvisor",
    "AsyncTokenWindowChatMemory",
    "BaseAdvisor",
    "CallAdvisor",
    "CharacterTokenEstimator",
    "ChatClient",
    "ChatClientRequest",
    "ChatClientResponse",
    "ChatMemError",
    "ChatMemory",
    "ChatMemoryLog",
    "ChatMemoryRepository",
    "ChatModel",
    "ChatModelConnectionError",
    "ChatModelError",
    "ChatModelHTTPError",
    "ChatModelResponseError",
    "ChatModelTimeoutError",
    "ChatOptions",
    "ChatResponse",
    "ConfigurationError",
    "ConversationPage",
    "Generation",
    "InMemoryChatMemoryRepository",
    "InvalidConversationIdError",
    "Media",
    "Message",
    "MessageDecodeError",
    "MessageType",
    "MessageWindowChatMemory",
    "MissingConversationIdError",
    "Position",
    "Prompt",
    "RepositoryConnectionError",
    "RepositoryError",
    "RepositoryOutcomeUnknownError",
    "RepositoryTimeoutError",
    "RepositoryWriteTimeoutError",
    "StoredMessage",
    "StreamAdvisor",
    "SystemMessage",
    "TiktokenTokenEstimator",
    "TokenEstimator",
    "TokenWindowChatMemory",
    "Tool",
    "ToolCall",
    "ToolDefinition",
    "ToolExecutionError",
    "ToolIterationLimitError",
    "ToolResponse",
    "ToolResponseMessage",
    "Usage",
    "UserMessage",
    "__version__",
    "decode_message",
    "encode_message",
    "owner_of",
    "scoped_conversation_id",
    "split_conversation_id",
    "tool",
    "validate_conversation_id",
]

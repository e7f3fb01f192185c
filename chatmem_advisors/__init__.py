"""Advisors that give a ChatClient memory and logging.

Example:
    ```python
    from chatmem_advisors import MessageChatMemoryAdvisor

    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    ```
"""

from chatmem_advisors._async.memory_advisor import AsyncMessageChatMemoryAdvisor
from chatmem_advisors._async.vector_store_advisor import AsyncVectorStoreChatMemoryAdvisor
from chatmem_advisors._logger import AsyncSimpleLoggerAdvisor, SimpleLoggerAdvisor
from chatmem_advisors._long_term import (
    LONG_TERM_MEMORY_END,
    LONG_TERM_MEMORY_START,
    VECTOR_STORE_TOP_K,
)
from chatmem_advisors._sync.memory_advisor import MessageChatMemoryAdvisor
from chatmem_advisors._sync.vector_store_advisor import VectorStoreChatMemoryAdvisor

__all__ = [
    "LONG_TERM_MEMORY_END",
    "LONG_TERM_MEMORY_START",
    "VECTOR_STORE_TOP_K",
    "AsyncMessageChatMemoryAdvisor",
    "AsyncSimpleLoggerAdvisor",
    "AsyncVectorStoreChatMemoryAdvisor",
    "MessageChatMemoryAdvisor",
    "SimpleLoggerAdvisor",
    "VectorStoreChatMemoryAdvisor",
]

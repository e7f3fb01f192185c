"""Advisors that give a ChatClient memory and logging.

Example:
    ```python
    from chatmem_advisors import MessageChatMemoryAdvisor

    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    ```
"""

from chatmem_advisors._async.logger_advisor import AsyncSimpleLoggerAdvisor
from chatmem_advisors._async.memory_advisor import AsyncMessageChatMemoryAdvisor
from chatmem_advisors._sync.logger_advisor import SimpleLoggerAdvisor
from chatmem_advisors._sync.memory_advisor import MessageChatMemoryAdvisor

__all__ = [
    "AsyncMessageChatMemoryAdvisor",
    "AsyncSimpleLoggerAdvisor",
    "MessageChatMemoryAdvisor",
    "SimpleLoggerAdvisor",
]

"""The OpenAI chat models (``pip install "chatmem[openai]"``), sync and async.

:class:`OpenAIChatModel` speaks the Chat Completions API (and any server that copies it);
:class:`OpenAIResponsesChatModel` speaks the Responses API, for reasoning models whose
reasoning items must go back with the conversation.

Importing ``chatmem`` does not import this package or ``openai``.

Example:
    ```python
    from chatmem import ChatClient
    from chatmem.openai import OpenAIChatModel

    with OpenAIChatModel(model="gpt-4o-mini", base_url="http://127.0.0.1:11434/v1") as model:
        ChatClient.create(model).prompt("Hello").call().content()
    ```
"""

try:
    import openai as _openai  # noqa: F401  (checked first, so the error names the extra)
except ModuleNotFoundError as exc:
    if exc.name != "openai":
        raise
    raise ModuleNotFoundError(
        'chatmem.openai needs the OpenAI SDK: pip install "chatmem[openai]"', name="openai"
    ) from None

from chatmem.openai._async.embedding import AsyncOpenAIEmbeddingModel
from chatmem.openai._async.model import AsyncOpenAIChatModel
from chatmem.openai._async.responses_model import AsyncOpenAIResponsesChatModel
from chatmem.openai._sync.embedding import OpenAIEmbeddingModel
from chatmem.openai._sync.model import OpenAIChatModel
from chatmem.openai._sync.responses_model import OpenAIResponsesChatModel

__all__ = [
    "AsyncOpenAIChatModel",
    "AsyncOpenAIEmbeddingModel",
    "AsyncOpenAIResponsesChatModel",
    "OpenAIChatModel",
    "OpenAIEmbeddingModel",
    "OpenAIResponsesChatModel",
]

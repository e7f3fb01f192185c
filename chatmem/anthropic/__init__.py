"""The Anthropic chat model (``pip install "chatmem[anthropic]"``), sync and async.

Extended and interleaved thinking, tool use and prompt caching over the Messages API; the
model's thinking is stored with its answers and sent back to it. Importing ``chatmem`` does
not import this package or ``anthropic``.

Example:
    ```python
    from chatmem import ChatClient
    from chatmem.anthropic import AnthropicChatModel

    with AnthropicChatModel(model="claude-sonnet-4-5", thinking_budget=2048) as model:
        ChatClient.create(model).prompt("Hello").call().content()
    ```
"""

try:
    import anthropic as _anthropic  # noqa: F401  (checked first, so the error names the extra)
except ModuleNotFoundError as exc:
    if exc.name != "anthropic":
        raise
    raise ModuleNotFoundError(
        'chatmem.anthropic needs the Anthropic SDK: pip install "chatmem[anthropic]"',
        name="anthropic",
    ) from None

from chatmem.anthropic._async.model import AsyncAnthropicChatModel
from chatmem.anthropic._sync.model import AnthropicChatModel

__all__ = ["AnthropicChatModel", "AsyncAnthropicChatModel"]

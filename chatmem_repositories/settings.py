"""Configure chat memory from environment variables or a ``.env`` file.

Every setting is read from a ``CHATMEM_``-prefixed variable, so an app swaps PostgreSQL for
Redis by changing ``CHATMEM_REPOSITORY_URL`` and nothing else:

```
CHATMEM_REPOSITORY_URL=postgresql+psycopg://app:secret@db/app
CHATMEM_MEMORY=message_window
CHATMEM_MAX_MESSAGES=20
CHATMEM_TTL=P30D
CHATMEM_REPOSITORY_OPTIONS={"connect_timeout": 5, "driver_options": {"pool_size": 10}}
```

The library default is ``memory://`` (nothing survives the process); the ``chatmem`` command
line defaults to an embedded SQLite file in the user's data directory instead.

Needs ``pydantic-settings`` (``pip install "chatmem[settings]"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import Any

from pydantic import Field, JsonValue

try:
    from pydantic_settings import BaseSettings, SettingsConfigDict
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installed extras
    if exc.name != "pydantic_settings":
        raise
    raise ModuleNotFoundError(
        'chatmem_repositories.settings needs pydantic-settings: pip install "chatmem[settings]"',
        name=exc.name,
    ) from None

from chatmem import (
    AsyncChatMemoryRepository,
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
    CharacterTokenEstimator,
    ChatMemoryRepository,
    MessageWindowChatMemory,
    TiktokenTokenEstimator,
    TokenEstimator,
    TokenWindowChatMemory,
)
from chatmem.backend import MASK, Duration, is_secret_option, redact_url
from chatmem.repository import AsyncOwnedChatMemoryLog, OwnedChatMemoryLog
from chatmem_repositories._registry import create_async_repository, create_repository

__all__ = ["ChatMemorySettings", "MemoryKind", "TokenEstimatorKind"]


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: MASK if is_secret_option(str(k)) else _masked(v) for k, v in value.items()}
    return value


class MemoryKind(StrEnum):
    """Which window decides what the model sees."""

    MESSAGE_WINDOW = "message_window"
    """:class:`~chatmem.MessageWindowChatMemory`, bounded by ``max_messages``."""
    TOKEN_WINDOW = "token_window"
    """:class:`~chatmem.TokenWindowChatMemory`, bounded by ``max_tokens``."""


class TokenEstimatorKind(StrEnum):
    """How a token window counts tokens."""

    TIKTOKEN = "tiktoken"
    """:class:`~chatmem.TiktokenTokenEstimator` (needs ``chatmem[tokens]``)."""
    CHARACTER = "character"
    """:class:`~chatmem.CharacterTokenEstimator`: a character-count estimate, no dependency."""


class ChatMemorySettings(BaseSettings):
    """Chat memory configuration from ``CHATMEM_*`` environment variables or a ``.env`` file.

    Keyword arguments win over the environment, which wins over the ``.env`` file. The URL's
    credentials, and options named like one (``password``, ``token``...), never appear in
    the settings' repr.

    Example:
        ```python
        settings = ChatMemorySettings()  # reads CHATMEM_REPOSITORY_URL, CHATMEM_MAX_MESSAGES...
        with settings.build_repository() as repository:
            memory = settings.build_memory(repository)
            memory.add("007", UserMessage("My name is James Bond"))
        ```
    """

    model_config = SettingsConfigDict(
        env_prefix="CHATMEM_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
    )

    repository_url: str = "memory://"
    """Where the history lives (``CHATMEM_REPOSITORY_URL``); in-memory by default."""
    repository_options: dict[str, JsonValue] = Field(default_factory=dict)
    """Backend options as a JSON object (``CHATMEM_REPOSITORY_OPTIONS``); they win over the
    URL's query string."""
    memory: MemoryKind = MemoryKind.MESSAGE_WINDOW
    """The window kind (``CHATMEM_MEMORY``): ``message_window`` or ``token_window``."""
    max_messages: int = Field(default=20, ge=1)
    """Message window size, system message included (``CHATMEM_MAX_MESSAGES``)."""
    max_tokens: int = Field(default=4000, ge=1)
    """Token window budget (``CHATMEM_MAX_TOKENS``)."""
    token_estimator: TokenEstimatorKind = TokenEstimatorKind.TIKTOKEN
    """How the token window counts (``CHATMEM_TOKEN_ESTIMATOR``)."""
    ttl: Duration | None = None
    """Expire conversations this long after their last write (``CHATMEM_TTL``: seconds or
    ISO 8601 such as ``P30D``); ``None`` keeps them forever."""
    evict: bool = False
    """Delete messages that leave the window (``CHATMEM_EVICT``); by default they stay as
    history."""

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            if name == "repository_url":
                value = redact_url(value)
            elif name == "repository_options":
                # Options may carry credentials too, such as Neo4j's password, also inside
                # driver_options (a mapping of driver arguments).
                value = _masked(value)
            yield name, value

    @property
    def redacted_url(self) -> str:
        """The repository URL with every credential replaced by ``***``, for logs and output."""
        return redact_url(self.repository_url)

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = dict(self.repository_options)
        if self.ttl is not None:
            options.setdefault("ttl", self.ttl)
        return options

    def _estimator(self) -> TokenEstimator:
        if self.token_estimator is TokenEstimatorKind.CHARACTER:
            return CharacterTokenEstimator()
        return TiktokenTokenEstimator()

    def build_repository(self) -> OwnedChatMemoryLog:
        """Create the configured sync repository; the caller closes it.

        Raises:
            ConfigurationError: For an unknown scheme or option, a bad value or a missing
                driver (see :func:`~chatmem_repositories.create_repository`).
        """
        return create_repository(self.repository_url, **self._options())

    def build_async_repository(self) -> AsyncOwnedChatMemoryLog:
        """Create the configured async repository; the caller closes it with ``aclose``.

        Raises:
            ConfigurationError: As :meth:`build_repository`.
        """
        return create_async_repository(self.repository_url, **self._options())

    def build_memory(
        self, repository: ChatMemoryRepository | None = None
    ) -> MessageWindowChatMemory | TokenWindowChatMemory:
        """Create the configured sync chat memory.

        Args:
            repository: The repository to use. If omitted, one is built from the URL and the
                memory's ``repository`` attribute owns it: close ``memory.repository`` when
                done.

        Raises:
            ConfigurationError: As :meth:`build_repository`.
        """
        if repository is None:
            repository = self.build_repository()
        if self.memory is MemoryKind.TOKEN_WINDOW:
            return TokenWindowChatMemory(
                repository,
                max_tokens=self.max_tokens,
                token_estimator=self._estimator(),
                evict=self.evict,
            )
        return MessageWindowChatMemory(repository, max_messages=self.max_messages, evict=self.evict)

    def build_async_memory(
        self, repository: AsyncChatMemoryRepository | None = None
    ) -> AsyncMessageWindowChatMemory | AsyncTokenWindowChatMemory:
        """Create the configured async chat memory.

        Args:
            repository: The async repository to use. If omitted, one is built from the URL and
                the memory's ``repository`` attribute owns it: ``await memory.repository.aclose()``
                when done.

        Raises:
            ConfigurationError: As :meth:`build_repository`.
        """
        if repository is None:
            repository = self.build_async_repository()
        if self.memory is MemoryKind.TOKEN_WINDOW:
            return AsyncTokenWindowChatMemory(
                repository,
                max_tokens=self.max_tokens,
                token_estimator=self._estimator(),
                evict=self.evict,
            )
        return AsyncMessageWindowChatMemory(
            repository, max_messages=self.max_messages, evict=self.evict
        )

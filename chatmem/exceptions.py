"""Exceptions raised by chatmem.

Every error chatmem raises derives from :class:`ChatMemError`, so one ``except`` clause
catches them all. The tree::

    ChatMemError
    ├── ConfigurationError (also ValueError)   bad option, URL, scheme or argument
    │   └── InvalidConversationIdError         empty, too long or control characters
    ├── RepositoryError                        the storage layer failed
    │   ├── RepositoryConnectionError          the server cannot be reached or went away
    │   │   └── RepositoryOutcomeUnknownError  a write may or may not have been applied
    │   │       └── RepositoryWriteTimeoutError (also RepositoryTimeoutError)
    │   ├── RepositoryTimeoutError             the server did not answer in time
    │   └── MessageDecodeError                 a stored record cannot be decoded
    ├── ChatModelError                         the chat model failed
    │   ├── ChatModelHTTPError                 the provider answered with an error status
    │   ├── ChatModelConnectionError           the provider cannot be reached or went away
    │   │   └── ChatModelTimeoutError          the provider did not answer in time
    │   └── ChatModelResponseError             the provider's answer makes no sense
    ├── ToolExecutionError                     running the model's tool calls failed
    │   └── ToolIterationLimitError            the model kept calling tools past the bound
    └── AdvisorError                           an advisor refused the request
        └── MissingConversationIdError (also ValueError)

Errors raised because a driver failed keep the driver's exception as ``__cause__``.

A failed write raises plain :class:`RepositoryConnectionError` or
:class:`RepositoryTimeoutError` only when nothing was applied (the request never left, or
its transaction was rolled back). When the request may have reached the server and the
answer was lost, it raises :class:`RepositoryOutcomeUnknownError`; send the same write again
(appends skip message ids already stored, so a repeated append is applied exactly once).
"""

from __future__ import annotations

__all__ = [
    "AdvisorError",
    "ChatMemError",
    "ChatModelConnectionError",
    "ChatModelError",
    "ChatModelHTTPError",
    "ChatModelResponseError",
    "ChatModelTimeoutError",
    "ConfigurationError",
    "InvalidConversationIdError",
    "MessageDecodeError",
    "MissingConversationIdError",
    "RepositoryConnectionError",
    "RepositoryError",
    "RepositoryOutcomeUnknownError",
    "RepositoryTimeoutError",
    "RepositoryWriteTimeoutError",
    "ToolExecutionError",
    "ToolIterationLimitError",
    "VersionConflictError",
]


class ChatMemError(Exception):
    """Base class of every error chatmem raises."""


class ConfigurationError(ChatMemError, ValueError):
    """An option, URL, scheme or argument is invalid.

    Raised before any I/O happens, with a message naming the offending value.
    """


class InvalidConversationIdError(ConfigurationError):
    """A conversation id is empty, too long, not a string or contains control characters."""


class RepositoryError(ChatMemError):
    """The storage layer failed.

    Attributes:
        backend: Short name of the backend that failed, such as ``"postgresql"``.
    """

    def __init__(self, message: str, *, backend: str | None = None) -> None:
        super().__init__(message)
        self.backend = backend

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.args, self.__dict__))


class RepositoryConnectionError(RepositoryError):
    """The server cannot be reached, refused the connection or went away mid-operation."""


class RepositoryTimeoutError(RepositoryError):
    """The server did not answer within the configured time."""


class RepositoryOutcomeUnknownError(RepositoryConnectionError):
    """A write failed after its request may have reached the server.

    The connection broke, or the answer did not come in time, after the request was sent:
    the write may or may not have been applied, and the client cannot tell which. Send the
    same write again once the server is back. Every write of the built-in repositories is
    safe to repeat: an append skips the message ids already stored in the conversation (so
    the retried messages are stored exactly once, in their first position), and replacing,
    deleting and purging give the same result when repeated.

    Reads never raise it; nor does a write that failed before anything was sent (no
    connection could be made), which raises a plain :class:`RepositoryConnectionError` or
    :class:`RepositoryTimeoutError`.
    """


class RepositoryWriteTimeoutError(RepositoryOutcomeUnknownError, RepositoryTimeoutError):
    """A write's answer did not come within the configured time; it may have been applied.

    Both a :class:`RepositoryOutcomeUnknownError` (send the same write again) and a
    :class:`RepositoryTimeoutError`, so ``except RepositoryTimeoutError`` still catches every
    timeout.
    """


class MessageDecodeError(RepositoryError):
    """A stored record cannot be decoded into a message.

    Only the broken record is affected; the rest of the conversation stays readable
    through the repository's other records.

    Attributes:
        conversation_id: The conversation the record belongs to, if known.
    """

    def __init__(
        self,
        message: str,
        *,
        conversation_id: str | None = None,
        backend: str | None = None,
    ) -> None:
        super().__init__(message, backend=backend)
        self.conversation_id = conversation_id


class VersionConflictError(ChatMemError):
    """A version-checked append found the conversation changed since its version was read.

    Nothing was stored. Read the conversation again (its window or history, with its new
    version) and decide again; an append without ``expected_version`` never raises it.

    Attributes:
        conversation_id: The conversation.
        expected_version: The version the caller read.
        actual_version: The conversation's version when the append was refused.
    """

    def __init__(self, conversation_id: str, expected_version: int, actual_version: int) -> None:
        super().__init__(
            f"conversation {conversation_id!r} is at version {actual_version}, not "
            f"{expected_version}: something was appended since it was read; nothing was stored"
        )
        self.conversation_id = conversation_id
        self.expected_version = expected_version
        self.actual_version = actual_version

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.args, self.__dict__))


class ChatModelError(ChatMemError):
    """The chat model failed to produce a response."""


class ChatModelHTTPError(ChatModelError):
    """The model provider answered with an error status.

    Attributes:
        status_code: The HTTP status code.
        body: The response body, parsed as JSON where possible.
    """

    def __init__(self, message: str, *, status_code: int, body: object = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.args, self.__dict__))


class ChatModelConnectionError(ChatModelError):
    """The model provider cannot be reached, or the connection broke mid-answer."""


class ChatModelTimeoutError(ChatModelConnectionError):
    """The model provider did not answer within the configured time."""


class ChatModelResponseError(ChatModelError):
    """The model provider's answer is malformed or incomplete."""


class ToolExecutionError(ChatMemError):
    """Running the model's tool calls failed in a way the model cannot be told about."""


class ToolIterationLimitError(ToolExecutionError):
    """The model kept calling tools past the client's ``max_tool_iterations``."""


class AdvisorError(ChatMemError):
    """An advisor refused or failed to process a request."""


class MissingConversationIdError(AdvisorError, ValueError):
    """A memory advisor was asked to run without a valid conversation id.

    Raised before the chat model is called, so nothing is sent and nothing is stored.
    """


def _rebuild(cls: type[Exception], args: tuple[object, ...], state: dict[str, object]) -> Exception:
    # Keyword-only constructor arguments break the default pickling of exceptions;
    # rebuild without calling __init__ and restore the attributes.
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc

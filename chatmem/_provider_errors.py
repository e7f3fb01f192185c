"""Errors of the providers' SDKs, as chatmem's ``ChatModelError`` branch.

The OpenAI and Anthropic SDKs are generated from one template: the same error classes under
the same names (``APIStatusError``, ``APITimeoutError``, ...), a base class of their own, and
httpx underneath. One mapping serves both.
"""

from __future__ import annotations

from types import ModuleType

from chatmem.exceptions import ChatModelError, ChatModelHTTPError, ChatModelResponseError
from chatmem.model import ChatModelConnectionError, ChatModelTimeoutError

__all__ = ["map_sdk_error"]


def map_sdk_error(
    exc: BaseException, sdk: ModuleType, base: type[Exception]
) -> ChatModelError | None:
    """Map an SDK's (or its HTTP library's) error to chatmem's ``ChatModelError`` branch.

    Args:
        exc: The error.
        sdk: The SDK's module (``openai`` or ``anthropic``), which names its error classes.
        base: The SDK's base error class (``openai.OpenAIError``, ``anthropic.AnthropicError``).

    Returns:
        The chatmem error to raise (``from exc``), or ``None`` if ``exc`` is not a provider
        or transport error.
    """
    if isinstance(exc, sdk.APIStatusError):
        return ChatModelHTTPError(
            f"the provider answered {exc.status_code}: {exc.message}",
            status_code=exc.status_code,
            body=exc.body,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return ChatModelTimeoutError(f"the provider did not answer in time: {exc}")
    if isinstance(exc, sdk.APIConnectionError):
        return ChatModelConnectionError(f"cannot reach the provider: {exc}")
    if isinstance(exc, sdk.APIResponseValidationError):
        return ChatModelResponseError(f"the provider's answer is malformed: {exc}")
    if isinstance(exc, base):
        return ChatModelError(f"the provider failed: {exc}")
    module = type(exc).__module__
    if module.startswith("httpx") or module.startswith("httpcore"):
        if "Timeout" in type(exc).__name__:
            return ChatModelTimeoutError(f"the provider did not answer in time: {exc}")
        return ChatModelConnectionError(f"the connection to the provider failed: {exc}")
    return None

"""An advisor that logs requests and responses at DEBUG level."""

from __future__ import annotations

import logging
from collections.abc import Callable

from chatmem._async.advisors import AsyncAdvisorChain, AsyncBaseAdvisor
from chatmem.advisor import ChatClientRequest, ChatClientResponse
from chatmem.messages import Message, message_text

__all__ = ["AsyncSimpleLoggerAdvisor"]

logger = logging.getLogger("chatmem_advisors.logger")


def _describe(message: Message, redact: bool) -> str:
    text = message_text(message)
    shown = f"<{len(text)} chars>" if redact else repr(text)
    return f"{message.type.value}: {shown}"


def _request_text(request: ChatClientRequest, redact: bool) -> str:
    parts = [_describe(m, redact) for m in request.prompt.messages]
    return f"request: [{', '.join(parts)}] tools={sorted(request.tools)}"


def _response_text(response: ChatClientResponse, redact: bool) -> str:
    chat = response.chat_response
    parts = [_describe(m, redact) for m in chat.exchange]
    return f"response: [{', '.join(parts)}] finish={chat.finish_reason} usage={chat.usage}"


class AsyncSimpleLoggerAdvisor(AsyncBaseAdvisor):
    """Logs each request and response at DEBUG on the ``chatmem_advisors.logger`` logger.

    Example:
        ```python
        logging.getLogger("chatmem_advisors.logger").setLevel(logging.DEBUG)
        client = AsyncChatClient.builder(model).default_advisors(
            AsyncSimpleLoggerAdvisor(redact_content=True)).build()
        ```

    Args:
        redact_content: Log message lengths instead of their text.
        request_to_string: Custom formatting of requests (overrides ``redact_content``).
        response_to_string: Custom formatting of responses.
        order: Position in the chain.
    """

    def __init__(
        self,
        *,
        redact_content: bool = False,
        request_to_string: Callable[[ChatClientRequest], str] | None = None,
        response_to_string: Callable[[ChatClientResponse], str] | None = None,
        order: int = 0,
    ) -> None:
        super().__init__(order=order)
        self.redact_content = redact_content
        """Whether message text is replaced by its length."""
        self._request_to_string = request_to_string
        self._response_to_string = response_to_string

    async def before(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientRequest:
        """Log the request.

        Args:
            request: The request.
            chain: The rest of the chain.
        """
        if logger.isEnabledFor(logging.DEBUG):
            if self._request_to_string is not None:
                logger.debug("%s", self._request_to_string(request))
            else:
                logger.debug("%s", _request_text(request, self.redact_content))
        return request

    async def after(
        self, response: ChatClientResponse, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Log the response.

        Args:
            response: The response.
            chain: The rest of the chain.
        """
        if logger.isEnabledFor(logging.DEBUG):
            if self._response_to_string is not None:
                logger.debug("%s", self._response_to_string(response))
            else:
                logger.debug("%s", _response_text(response, self.redact_content))
        return response

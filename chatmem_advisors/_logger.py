"""An advisor that logs requests and responses at DEBUG level, in both chains."""

from __future__ import annotations

import logging
from collections.abc import Callable

from chatmem.advisor import ChatClientRequest, ChatClientResponse, PureAdvisor
from chatmem.messages import Message, message_text
from chatmem.telemetry import log_extra

__all__ = ["AsyncSimpleLoggerAdvisor", "SimpleLoggerAdvisor"]

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


class SimpleLoggerAdvisor(PureAdvisor):
    """Logs each request and response at DEBUG on the ``chatmem_advisors.logger`` logger.

    One class for both clients: it does no I/O of its own, so the same instance can be given
    to a :class:`~chatmem.ChatClient` and an :class:`~chatmem.AsyncChatClient`. Each record
    carries ``conversation_id``, ``trace_id`` and ``span_id`` attributes when known (see
    :func:`chatmem.telemetry.log_extra`), so logs join traces.

    Example:
        ```python
        import logging

        from chatmem import CONVERSATION_ID, ChatClient
        from chatmem.testing import ScriptedChatModel
        from chatmem_advisors import SimpleLoggerAdvisor

        logging.basicConfig(format="%(conversation_id)s %(message)s")
        logging.getLogger("chatmem_advisors.logger").setLevel(logging.DEBUG)
        client = (
            ChatClient.builder(ScriptedChatModel(["Hello, Mr Bond."]))
            .default_advisors(SimpleLoggerAdvisor(redact_content=True))
            .build()
        )
        client.prompt("Hi").advisors({CONVERSATION_ID: "007"}).call().content()
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

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        """Log the request.

        Args:
            request: The request.
        """
        if logger.isEnabledFor(logging.DEBUG):
            if self._request_to_string is not None:
                text = self._request_to_string(request)
            else:
                text = _request_text(request, self.redact_content)
            logger.debug("%s", text, extra=log_extra(request.context))
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        """Log the response.

        Args:
            response: The response.
        """
        if logger.isEnabledFor(logging.DEBUG):
            if self._response_to_string is not None:
                text = self._response_to_string(response)
            else:
                text = _response_text(response, self.redact_content)
            logger.debug("%s", text, extra=log_extra(response.context))
        return response


AsyncSimpleLoggerAdvisor = SimpleLoggerAdvisor
"""The same class: a :class:`SimpleLoggerAdvisor` works in the async chain too."""

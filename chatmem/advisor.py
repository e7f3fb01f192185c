"""The data that flows through an advisor chain, and how advisors are ordered. No I/O.

An advisor sees a :class:`ChatClientRequest` on the way in and a :class:`ChatClientResponse`
on the way out. Both carry the request *context*: advisor parameters such as
:data:`~chatmem.CONVERSATION_ID` plus whatever advisors put there for their own ``after``
step. Requests are immutable; an advisor that changes one returns a copy.

Order: advisors are sorted by ``order``, lower first, and the sort is stable, so advisors of
equal order run in the order they were given. The first advisor sees the request first and
the response last.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from chatmem.messages import AssistantMessage, Message
from chatmem.model import ChatResponse, Generation, Prompt, aggregate_chunks
from chatmem.tools import Tool

__all__ = [
    "DEFAULT_CHAT_MEMORY_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOWEST_PRECEDENCE",
    "AdvisorParams",
    "AdvisorSpec",
    "ChatClientRequest",
    "ChatClientResponse",
    "PureAdvisor",
    "aggregate_client_responses",
    "order_advisors",
]

HIGHEST_PRECEDENCE = -(2**31)
"""The lowest possible ``order``: runs first on the way in (Spring's ``Ordered``)."""
LOWEST_PRECEDENCE = 2**31 - 1
"""The highest possible ``order``: runs last on the way in, right before the model."""
DEFAULT_CHAT_MEMORY_ORDER = HIGHEST_PRECEDENCE + 1000
"""Default order of memory advisors: early, so later advisors see the whole conversation."""

A = TypeVar("A")


@dataclass(frozen=True, slots=True)
class ChatClientRequest:
    """A request on its way through the advisor chain to the model."""

    prompt: Prompt
    """What the model will be sent (advisors may rewrite it)."""
    context: Mapping[str, Any] = field(default_factory=dict)
    """Advisor parameters and advisors' own state for this request."""
    tools: Mapping[str, Tool] = field(default_factory=dict)
    """Tools the client runs when the model calls them, by name."""

    def with_prompt(self, prompt: Prompt) -> ChatClientRequest:
        """Return a copy with another prompt.

        Args:
            prompt: The new prompt.
        """
        return self._copy(prompt, self.context)

    def with_messages(self, messages: Sequence[Message]) -> ChatClientRequest:
        """Return a copy whose prompt has other messages.

        Args:
            messages: The new messages.
        """
        return self._copy(self.prompt.with_messages(messages), self.context)

    def with_context(self, **values: Any) -> ChatClientRequest:
        """Return a copy with context values added or replaced.

        Args:
            **values: The values.
        """
        return self._copy(self.prompt, {**self.context, **values})

    def _copy(self, prompt: Prompt, context: Mapping[str, Any]) -> ChatClientRequest:
        # Every request copies itself several times; dataclasses.replace looks the fields
        # up each time, the constructor does not (a subclass may have more fields).
        if type(self) is ChatClientRequest:
            return ChatClientRequest(prompt, context, self.tools)
        return dataclasses.replace(self, prompt=prompt, context=context)


@dataclass(frozen=True, slots=True)
class ChatClientResponse:
    """A response (or a stream chunk) on its way back through the advisor chain."""

    chat_response: ChatResponse
    """The model's response, with every message the exchange produced."""
    context: Mapping[str, Any] = field(default_factory=dict)
    """The context of the request that produced it."""


def aggregate_client_responses(
    chunks: Sequence[ChatClientResponse], context: Mapping[str, Any]
) -> ChatClientResponse:
    """Fold streamed chunks into one response (see :func:`chatmem.model.aggregate_chunks`).

    Args:
        chunks: The chunks, in order.
        context: The context to carry when the stream had no chunk.
    """
    if not chunks:
        empty = ChatResponse([Generation(AssistantMessage(""))])
        return ChatClientResponse(empty, context)
    return ChatClientResponse(aggregate_chunks(c.chat_response for c in chunks), chunks[-1].context)


class AdvisorParams:
    """Collects advisor parameters: ``lambda a: a.param(CONVERSATION_ID, "007")``."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        """The parameters set so far."""

    def param(self, key: str, value: Any) -> AdvisorParams:
        """Set one parameter.

        Args:
            key: The context key, such as :data:`~chatmem.CONVERSATION_ID`.
            value: Its value.
        """
        self.values[key] = value
        return self

    def params(self, values: Mapping[str, Any]) -> AdvisorParams:
        """Set several parameters.

        Args:
            values: Keys and values.
        """
        self.values.update(values)
        return self


class _PlacedAdvisor:
    """What every advisor base shares: a position in the chain and a name.

    Args:
        order: Position in the chain; lower runs first on the way in.
        name: A name for logs and spans; the class name by default.
    """

    def __init__(self, *, order: int = 0, name: str | None = None) -> None:
        self._order = order
        self._name = name or type(self).__name__

    @property
    def name(self) -> str:
        """A name for logs, spans and errors."""
        return self._name

    @property
    def order(self) -> int:
        """Position in the chain: lower runs first on the way in, last on the way out."""
        return self._order


class PureAdvisor(_PlacedAdvisor):
    """An advisor without I/O, written once and driven by both the sync and the async chain.

    Override :meth:`before` and/or :meth:`after`; both are plain methods, so the same
    instance works in a :class:`~chatmem.ChatClient` and an :class:`~chatmem.AsyncChatClient`.
    An advisor that reads or writes a store needs the chain's flavor: subclass
    :class:`~chatmem.BaseAdvisor` or :class:`~chatmem.AsyncBaseAdvisor` instead.

    In a streamed call, ``before`` runs before the first chunk and ``after`` runs once, with
    the aggregated response, after the last chunk was passed on; it does not run if the
    stream fails or the consumer stops early. Its return value is ignored there.

    Example:
        ```python
        from chatmem.client import ChatClient, PureAdvisor
        from chatmem.testing import ScriptedChatModel


        class Shout(PureAdvisor):
            def before(self, request):
                return request.with_context(shout=True)


        client = ChatClient.builder(ScriptedChatModel(["Hi"])).default_advisors(Shout()).build()
        print(client.prompt("Hello").call().content())
        ```

    Args:
        order: Position in the chain; lower runs first on the way in.
        name: A name for logs and spans; the class name by default.
    """

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        """Look at or change the request before it goes on. The default passes it on.

        Args:
            request: The request.
        """
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        """Look at or change the response on its way back. The default passes it on.

        Args:
            response: The response (aggregated, for a stream).
        """
        return response


def order_advisors(advisors: Sequence[A]) -> list[A]:
    """Sort advisors by their ``order`` attribute (default 0), stably.

    Args:
        advisors: The advisors, in the order they were added.
    """
    return sorted(advisors, key=_order_of)


def _order_of(advisor: object) -> int:
    order = getattr(advisor, "order", 0)
    return order if isinstance(order, int) else 0


AdvisorSpec = Callable[[AdvisorParams], object]
"""A function that sets advisor parameters."""

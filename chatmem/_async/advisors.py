"""The advisor API: call and stream advisors, the chain that runs them, and a base class."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from chatmem import _telemetry as telemetry
from chatmem._async.tracing import traced_stream
from chatmem._telemetry import ENABLED as TELEMETRY
from chatmem._telemetry import active as tracing_active
from chatmem._twins import async_closing
from chatmem.advisor import (
    ChatClientRequest,
    ChatClientResponse,
    PureAdvisor,
    _PlacedAdvisor,
    aggregate_client_responses,
)

__all__ = [
    "AsyncAdvisorChain",
    "AsyncBaseAdvisor",
    "AsyncCallAdvisor",
    "AsyncChainTerminal",
    "AsyncPureAdvisorAdapter",
    "AsyncStreamAdvisor",
]


@runtime_checkable
class AsyncCallAdvisor(Protocol):
    """Wraps a blocking (non-streaming) call: sees the request, calls on, sees the response."""

    @property
    def name(self) -> str:
        """A name for logs and errors."""
        ...

    @property
    def order(self) -> int:
        """Position in the chain: lower runs first on the way in, last on the way out."""
        ...

    async def advise_call(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Handle a request, usually by calling ``chain.next_call(request)``.

        Args:
            request: The request so far.
            chain: The rest of the chain.
        """
        ...


@runtime_checkable
class AsyncStreamAdvisor(Protocol):
    """Wraps a streaming call: sees the request and every chunk on its way out."""

    @property
    def name(self) -> str:
        """A name for logs and errors."""
        ...

    @property
    def order(self) -> int:
        """Position in the chain: lower runs first on the way in, last on the way out."""
        ...

    def advise_stream(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> AsyncIterator[ChatClientResponse]:
        """Handle a request, usually by iterating ``chain.next_stream(request)``.

        Args:
            request: The request so far.
            chain: The rest of the chain.
        """
        ...


class AsyncChainTerminal(Protocol):
    """The end of a chain: what runs the model (and the tool loop) for a request."""

    async def call(self, request: ChatClientRequest) -> ChatClientResponse:
        """Run the request to a complete response.

        Args:
            request: The request.
        """
        ...

    def stream(self, request: ChatClientRequest) -> AsyncIterator[ChatClientResponse]:
        """Run the request as a stream of chunks.

        Args:
            request: The request.
        """
        ...


class AsyncAdvisorChain:
    """The advisors still to run for one request, then the model.

    Each step hands the next advisor a chain that starts after it, so a chain object can be
    reused and shared by concurrent requests.
    """

    __slots__ = ("_call", "_index", "_stream", "_terminal")

    def __init__(
        self,
        call_advisors: Sequence[AsyncCallAdvisor],
        stream_advisors: Sequence[AsyncStreamAdvisor],
        terminal: AsyncChainTerminal,
    ) -> None:
        self._call = call_advisors
        self._stream = stream_advisors
        self._terminal = terminal
        self._index = 0

    def _rest(self) -> AsyncAdvisorChain:
        # Built without __init__ so the position stays out of the public signature.
        rest = AsyncAdvisorChain.__new__(AsyncAdvisorChain)
        rest._call = self._call
        rest._stream = self._stream
        rest._terminal = self._terminal
        rest._index = self._index + 1
        return rest

    @property
    def call_advisors(self) -> Sequence[AsyncCallAdvisor]:
        """The call advisors still to run."""
        return self._call[self._index :]

    @property
    def stream_advisors(self) -> Sequence[AsyncStreamAdvisor]:
        """The stream advisors still to run."""
        return self._stream[self._index :]

    async def next_call(self, request: ChatClientRequest) -> ChatClientResponse:
        """Run the next call advisor, or the model when none is left.

        Args:
            request: The request to pass on.
        """
        if self._index >= len(self._call):
            return await self._terminal.call(request)
        advisor = self._call[self._index]
        if not TELEMETRY or not tracing_active():
            return await advisor.advise_call(request, self._rest())
        with telemetry.activate(telemetry.advisor_span(advisor)):
            return await advisor.advise_call(request, self._rest())

    def next_stream(self, request: ChatClientRequest) -> AsyncIterator[ChatClientResponse]:
        """Run the next stream advisor, or the model when none is left.

        Args:
            request: The request to pass on.
        """
        if self._index >= len(self._stream):
            return self._terminal.stream(request)
        advisor = self._stream[self._index]
        if not TELEMETRY or not tracing_active():
            return advisor.advise_stream(request, self._rest())
        return traced_stream(
            lambda: telemetry.advisor_span(advisor), advisor.advise_stream(request, self._rest())
        )


class AsyncBaseAdvisor(_PlacedAdvisor):
    """An advisor written once for both chains: override :meth:`before` and/or :meth:`after`.

    In a streamed call, ``before`` runs before the first chunk and ``after`` runs once, with
    the aggregated response, after the last chunk was passed on; it does not run if the
    stream fails or the consumer stops early. Its return value is ignored there (the chunks
    are already out).

    Example:
        ```python
        class Shout(AsyncBaseAdvisor):
            async def before(self, request, chain):
                return request.with_context(shout=True)
        ```

    Args:
        order: Position in the chain; lower runs first on the way in.
        name: A name for logs; the class name by default.
    """

    async def before(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientRequest:
        """Look at or change the request before it goes on. The default passes it on.

        Args:
            request: The request.
            chain: The rest of the chain.
        """
        return request

    async def after(
        self, response: ChatClientResponse, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Look at or change the response on its way back. The default passes it on.

        Args:
            response: The response (aggregated, for a stream).
            chain: The rest of the chain.
        """
        return response

    async def advise_call(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Run :meth:`before`, the rest of the chain, then :meth:`after`.

        Args:
            request: The request.
            chain: The rest of the chain.
        """
        request = await self.before(request, chain)
        response = await chain.next_call(request)
        return await self.after(response, chain)

    async def advise_stream(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> AsyncIterator[ChatClientResponse]:
        """Run :meth:`before`, pass every chunk on, then :meth:`after` once at the end.

        Args:
            request: The request.
            chain: The rest of the chain.
        """
        request = await self.before(request, chain)
        chunks: list[ChatClientResponse] = []
        async with async_closing(chain.next_stream(request)) as stream:
            async for chunk in stream:
                chunks.append(chunk)
                yield chunk
        await self.after(aggregate_client_responses(chunks, request.context), chain)


class AsyncPureAdvisorAdapter(AsyncBaseAdvisor):
    """Drives a :class:`~chatmem.PureAdvisor` in this chain: its plain ``before``/``after``.

    The client wraps pure advisors itself; there is no need to use this class directly.

    Args:
        advisor: The pure advisor.
    """

    def __init__(self, advisor: PureAdvisor) -> None:
        super().__init__(order=advisor.order, name=advisor.name)
        self.advisor = advisor
        """The pure advisor."""

    async def before(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientRequest:
        """Run the pure advisor's ``before``.

        Args:
            request: The request.
            chain: The rest of the chain.
        """
        return self.advisor.before(request)

    async def after(
        self, response: ChatClientResponse, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Run the pure advisor's ``after``.

        Args:
            response: The response.
            chain: The rest of the chain.
        """
        return self.advisor.after(response)

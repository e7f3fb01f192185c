"""The chat client: Spring AI's fluent API, an advisor chain and the tool loop."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

from chatmem._async.advisors import (
    AsyncAdvisorChain,
    AsyncCallAdvisor,
    AsyncPureAdvisorAdapter,
    AsyncStreamAdvisor,
)
from chatmem._async.model import AsyncChatModel
from chatmem._async.tool_calling import execute_tool_calls
from chatmem._async.tracing import traced_stream
from chatmem._client_request import (
    BuilderBase,
    RequestSpecBase,
    RequestState,
    build_request,
    coroutine_tool_error,
    entity_format,
    tool_context,
)
from chatmem._telemetry import ENABLED as TELEMETRY
from chatmem._telemetry import active as tracing_active
from chatmem._telemetry import genai
from chatmem._twins import AsyncTwin, async_closing, check_flavor
from chatmem.advisor import ChatClientRequest, ChatClientResponse, PureAdvisor, order_advisors
from chatmem.exceptions import ChatModelResponseError, ConfigurationError
from chatmem.memory import CONVERSATION_ID
from chatmem.messages import AssistantMessage, Message, TokenUsage
from chatmem.model import ChatResponse, Generation, Prompt, aggregate_chunks, combine_usage
from chatmem.tools import (
    DEFAULT_MAX_TOOL_ITERATIONS,
    ToolErrorHandler,
    ToolIterationLimitError,
    default_tool_error_handler,
)

__all__ = [
    "AsyncCallResponseSpec",
    "AsyncChatClient",
    "AsyncChatClientBuilder",
    "AsyncChatClientRequestSpec",
    "AsyncStreamResponseSpec",
]

T = TypeVar("T")


def _answer(response: ChatResponse) -> AssistantMessage:
    result = response.result
    if result is None:
        raise ChatModelResponseError("the model returned no generation")
    return result.message


def _finished(
    response: ChatResponse, usage: TokenUsage | None, produced: list[Message]
) -> ChatResponse:
    if type(response) is ChatResponse:  # the constructor: dataclasses.replace is slower
        generations, model, metadata = response.generations, response.model, response.metadata
        return ChatResponse(generations, usage, model, produced, metadata)
    return dataclasses.replace(response, usage=usage, exchange=produced)


class _AsyncModelTerminal:
    """The end of every chain: calls the model and runs the tool loop."""

    def __init__(
        self, model: AsyncChatModel, max_iterations: int, on_error: ToolErrorHandler
    ) -> None:
        self.model = model
        self.max_iterations = max_iterations
        self.on_error = on_error

    def _limit(self) -> ToolIterationLimitError:
        return ToolIterationLimitError(
            f"the model still called tools after {self.max_iterations} rounds "
            f"(max_tool_iterations={self.max_iterations})"
        )

    async def _model_call(self, prompt: Prompt, request: ChatClientRequest) -> ChatResponse:
        if not TELEMETRY or not tracing_active():
            return await self.model.call(prompt)
        call = genai.model_call(prompt, self.model, request.context.get(CONVERSATION_ID))
        with genai.running(call):
            response = await self.model.call(prompt)
            call.finish(response)
        return response

    def _model_stream(
        self, prompt: Prompt, request: ChatClientRequest
    ) -> AsyncIterator[ChatResponse]:
        stream = self.model.stream(prompt)
        if not TELEMETRY or not tracing_active():
            return stream
        call = genai.model_call(prompt, self.model, request.context.get(CONVERSATION_ID))
        return traced_stream(lambda: call.span, stream, call.finish_chunks, call.fail)

    async def call(self, request: ChatClientRequest) -> ChatClientResponse:
        messages: list[Message] = list(request.prompt.messages)
        produced: list[Message] = []
        usage: TokenUsage | None = None
        for round_ in range(self.max_iterations + 1):
            response = await self._model_call(request.prompt.with_messages(messages), request)
            usage = combine_usage(usage, response.usage)
            answer = _answer(response)
            produced.append(answer)
            if not answer.tool_calls:
                final = _finished(response, usage, produced)
                return ChatClientResponse(final, request.context)
            if round_ == self.max_iterations:
                break
            results = await execute_tool_calls(
                answer.tool_calls, request.tools, self.on_error, tool_context(request)
            )
            produced.append(results)
            messages = [*messages, answer, results]
        raise self._limit()

    async def stream(self, request: ChatClientRequest) -> AsyncIterator[ChatClientResponse]:
        messages: list[Message] = list(request.prompt.messages)
        produced: list[Message] = []
        for round_ in range(self.max_iterations + 1):
            chunks: list[ChatResponse] = []
            prompt = request.prompt.with_messages(messages)
            async with async_closing(self._model_stream(prompt, request)) as stream:
                async for chunk in stream:
                    chunks.append(chunk)
                    yield ChatClientResponse(chunk, request.context)
            whole = aggregate_chunks(chunks)
            answer = _answer(whole)
            produced.append(answer)
            if not answer.tool_calls:
                # The closing chunk adds no text: it hands advisors the whole exchange.
                last = ChatResponse(
                    [Generation(AssistantMessage(""), whole.finish_reason)],
                    model=whole.model,
                    exchange=produced,
                )
                yield ChatClientResponse(last, request.context)
                return
            if round_ == self.max_iterations:
                break
            results = await execute_tool_calls(
                answer.tool_calls, request.tools, self.on_error, tool_context(request)
            )
            produced.append(results)
            messages = [*messages, answer, results]
        raise self._limit()


def _split_advisors(
    advisors: Sequence[object],
) -> tuple[list[AsyncCallAdvisor], list[AsyncStreamAdvisor]]:
    calls: list[AsyncCallAdvisor] = []
    streams: list[AsyncStreamAdvisor] = []
    for advisor in advisors:
        if isinstance(advisor, PureAdvisor):
            adapter = AsyncPureAdvisorAdapter(advisor)
            calls.append(adapter)
            streams.append(adapter)
            continue
        # hasattr, not isinstance on the runtime-checkable protocols: this runs per request
        # and protocol isinstance checks cost more than the rest of the chain.
        if hasattr(advisor, "advise_call"):
            check_flavor(advisor, "advise_call", is_async=AsyncTwin.IS_ASYNC, role="call advisor")
            calls.append(cast(AsyncCallAdvisor, advisor))
        if hasattr(advisor, "advise_stream"):
            streams.append(cast(AsyncStreamAdvisor, advisor))
    return calls, streams


class AsyncCallResponseSpec:
    """The answer of ``prompt().call()``; each method runs the request once."""

    def __init__(self, client: AsyncChatClient, state: RequestState) -> None:
        self._client = client
        self._state = state

    async def _run(self, entity: type[Any] | None = None) -> ChatClientResponse:
        request, chain = self._client._prepare(self._state)
        if entity is not None:
            request = entity_format(request, entity)
        if not TELEMETRY or not tracing_active():
            return await chain.next_call(request)
        with genai.activate(genai.chat_span(request, self._client.chat_model)) as span:
            response = await chain.next_call(request)
            genai.record_chat_response(span, response.chat_response)
        return response

    async def chat_client_response(self) -> ChatClientResponse:
        """Run the request; return the response with the final request context."""
        return await self._run()

    async def chat_response(self) -> ChatResponse:
        """Run the request; return the model's response (with every exchanged message)."""
        return (await self._run()).chat_response

    async def content(self) -> str:
        """Run the request; return the answer text."""
        return (await self._run()).chat_response.text

    async def entity(self, entity_type: type[T]) -> T:
        """Run the request asking for JSON matching ``entity_type``; return it parsed.

        Args:
            entity_type: A pydantic model or any type pydantic can validate.

        Raises:
            ChatModelResponseError: If the answer does not validate.
        """
        text = (await self._run(entity_type)).chat_response.text
        try:
            return TypeAdapter(entity_type).validate_json(text)
        except ValidationError as exc:
            raise ChatModelResponseError(
                f"the answer is not a valid {getattr(entity_type, '__name__', entity_type)}: "
                f"{exc.error_count()} error(s)"
            ) from exc


class AsyncStreamResponseSpec:
    """The answer of ``prompt().stream()``; each method streams the request once.

    Memory advisors save a streamed answer once it was consumed to the end; stopping early
    (closing the iterator, cancelling the task) stores nothing.
    """

    def __init__(self, client: AsyncChatClient, state: RequestState) -> None:
        self._client = client
        self._state = state

    def chat_client_response(self) -> AsyncIterator[ChatClientResponse]:
        """Stream the request; yield chunks with the request context."""
        request, chain = self._client._prepare(self._state)
        if not TELEMETRY or not tracing_active():
            return chain.next_stream(request)
        model = self._client.chat_model
        return traced_stream(
            lambda: genai.chat_span(request, model),
            chain.next_stream(request),
            genai.end_chat_stream,
        )

    async def chat_response(self) -> AsyncIterator[ChatResponse]:
        """Stream the request; yield the model's chunks (the last one carries the exchange)."""
        async with async_closing(self.chat_client_response()) as stream:
            async for chunk in stream:
                yield chunk.chat_response

    async def content(self) -> AsyncIterator[str]:
        """Stream the request; yield the answer text piece by piece."""
        async with async_closing(self.chat_client_response()) as stream:
            async for chunk in stream:
                text = chunk.chat_response.text
                if text:
                    yield text


class AsyncChatClientRequestSpec(RequestSpecBase):
    """One request being built: ``.user(...).advisors(...).call()`` or ``.stream()``."""

    def __init__(self, client: AsyncChatClient, state: RequestState) -> None:
        super().__init__(state)
        self._client = client

    def call(self) -> AsyncCallResponseSpec:
        """Prepare a blocking call; the returned spec's methods run it."""
        return AsyncCallResponseSpec(self._client, self._state.copy())

    def stream(self) -> AsyncStreamResponseSpec:
        """Prepare a streamed call; the returned spec's methods run it."""
        return AsyncStreamResponseSpec(self._client, self._state.copy())


class AsyncChatClient:
    """Talks to a chat model through an advisor chain, running tools the model calls.

    Example:
        ```python
        client = (AsyncChatClient.builder(model)
                  .default_system("You are a helpful assistant.")
                  .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
                  .build())
        await client.prompt().user("Hi").advisors({CONVERSATION_ID: "007"}).call().content()
        ```

    A client is immutable and safe to share between concurrent requests.

    Args:
        chat_model: The model.
        max_tool_iterations: Rounds of tool calls per request before
            :class:`~chatmem.tools.ToolIterationLimitError` is raised.
        tool_error_handler: Turns a failing tool call into the text the model sees.
    """

    def __init__(
        self,
        chat_model: AsyncChatModel,
        *,
        max_tool_iterations: int = DEFAULT_MAX_TOOL_ITERATIONS,
        tool_error_handler: ToolErrorHandler = default_tool_error_handler,
    ) -> None:
        check_flavor(chat_model, "call", is_async=AsyncTwin.IS_ASYNC, role="chat model")
        if not isinstance(max_tool_iterations, int) or max_tool_iterations < 0:
            raise ConfigurationError(
                f"max_tool_iterations must be at least 0, got {max_tool_iterations!r}"
            )
        self.chat_model = chat_model
        """The model."""
        self._terminal = _AsyncModelTerminal(chat_model, max_tool_iterations, tool_error_handler)
        self._use_defaults(RequestState())

    def _use_defaults(self, defaults: RequestState) -> None:
        # The builder's way in: defaults are no constructor parameter, so the public signature
        # shows only what a caller may pass.
        self._defaults = defaults
        # Most requests add no advisor of their own: split the defaults once.
        self._default_chain = _split_advisors(order_advisors(defaults.advisors))

    @staticmethod
    def builder(chat_model: AsyncChatModel) -> AsyncChatClientBuilder:
        """Start building a client with defaults.

        Args:
            chat_model: The model.
        """
        return AsyncChatClientBuilder(chat_model)

    @staticmethod
    def create(chat_model: AsyncChatModel) -> AsyncChatClient:
        """Build a client without defaults.

        Args:
            chat_model: The model.
        """
        return AsyncChatClient(chat_model)

    def prompt(self, text: str | None = None) -> AsyncChatClientRequestSpec:
        """Start a request.

        Args:
            text: A user message, as a shortcut for ``.user(text)``.
        """
        spec = AsyncChatClientRequestSpec(self, RequestState())
        return spec.user(text) if text is not None else spec

    def _prepare(self, state: RequestState) -> tuple[ChatClientRequest, AsyncAdvisorChain]:
        request, advisors = build_request(self._defaults, state)
        if not AsyncTwin.IS_ASYNC:
            for t in request.tools.values():
                if t.is_async:
                    raise coroutine_tool_error(t.name)
        calls, streams = _split_advisors(advisors) if state.advisors else self._default_chain
        return request, AsyncAdvisorChain(calls, streams, self._terminal)


class AsyncChatClientBuilder(BuilderBase):
    """Collects a client's defaults; :meth:`build` makes the client."""

    def __init__(self, chat_model: AsyncChatModel) -> None:
        super().__init__()
        self._model = chat_model
        self._max_tool_iterations = DEFAULT_MAX_TOOL_ITERATIONS
        self._on_error: ToolErrorHandler = default_tool_error_handler

    def max_tool_iterations(self, rounds: int) -> AsyncChatClientBuilder:
        """Set how many rounds of tool calls a request may take.

        Args:
            rounds: The bound (0 forbids tool calls).
        """
        self._max_tool_iterations = rounds
        return self

    def tool_error_handler(self, handler: ToolErrorHandler) -> AsyncChatClientBuilder:
        """Set what the model is told when a tool fails (raise in it to abort instead).

        Args:
            handler: ``(call, exception) -> text``.
        """
        self._on_error = handler
        return self

    def build(self) -> AsyncChatClient:
        """Make the client."""
        client = AsyncChatClient(
            self._model,
            max_tool_iterations=self._max_tool_iterations,
            tool_error_handler=self._on_error,
        )
        client._use_defaults(self._defaults.copy())
        return client

"""The fluent request specs shared by both client twins, and request building. No I/O."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Self

from pydantic import BaseModel, JsonValue, TypeAdapter

from chatmem.advisor import AdvisorParams, ChatClientRequest, PureAdvisor, order_advisors
from chatmem.exceptions import ConfigurationError
from chatmem.memory import CONVERSATION_ID
from chatmem.messages import Media, Message, SystemMessage, UserMessage
from chatmem.model import ChatOptions, Prompt
from chatmem.tools import Tool, ToolContext, as_tools, tool_registry

__all__ = [
    "BuilderBase",
    "RequestSpecBase",
    "RequestState",
    "build_request",
    "coroutine_tool_error",
    "entity_format",
    "tool_context",
]


def coroutine_tool_error(name: str) -> ConfigurationError:
    """The error for a coroutine-function tool given to the blocking client.

    Args:
        name: The tool's name.
    """
    return ConfigurationError(
        f"tool {name!r} is an async function; use AsyncChatClient or make it a plain function"
    )


_NO_OPTIONS = ChatOptions()  # shared by every state that sets none (options are frozen)


@dataclass(slots=True)
class RequestState:
    """What a request spec (or a client's defaults) has collected so far."""

    system: SystemMessage | None = None
    user: UserMessage | None = None
    messages: list[Message] = field(default_factory=list)
    advisors: list[object] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    tools: list[Tool] = field(default_factory=list)
    options: ChatOptions = _NO_OPTIONS

    def copy(self) -> RequestState:
        """Return a copy whose lists and dicts are independent of this one."""
        return RequestState(
            self.system,
            self.user,
            list(self.messages),
            list(self.advisors),
            dict(self.params),
            list(self.tools),
            self.options,
        )


def _system(text: str | SystemMessage) -> SystemMessage:
    return text if isinstance(text, SystemMessage) else SystemMessage(text)


def _user(text: str | UserMessage, media: Sequence[Media]) -> UserMessage:
    if isinstance(text, UserMessage):
        return text.model_copy(update={"media": [*text.media, *media]}) if media else text
    return UserMessage(text, media=list(media))


def _add_advisors(state: RequestState, items: Sequence[object]) -> None:
    for item in items:
        if isinstance(item, Mapping):
            state.params.update(item)
        elif (
            isinstance(item, PureAdvisor)
            or hasattr(item, "advise_call")
            or hasattr(item, "advise_stream")
        ):
            state.advisors.append(item)
        elif callable(item):
            params = AdvisorParams()
            item(params)
            state.params.update(params.values)
        else:
            raise ConfigurationError(
                f"advisors() takes advisors, a dict of parameters or a function setting "
                f"parameters; got {type(item).__name__}"
            )


def _options(options: ChatOptions | None, fields: dict[str, Any]) -> ChatOptions:
    try:
        extra = ChatOptions(**fields)
    except TypeError as exc:
        raise ConfigurationError(f"unknown chat option: {exc}") from exc
    return (options or ChatOptions()).merge(extra) if fields else (options or ChatOptions())


class RequestSpecBase:
    """The fluent part of ``client.prompt()``: system, user, messages, advisors, tools, options."""

    def __init__(self, state: RequestState) -> None:
        self._state = state

    def system(self, text: str | SystemMessage) -> Self:
        """Set the system message for this request (replaces the client's default).

        Args:
            text: The instructions.
        """
        self._state.system = _system(text)
        return self

    def user(self, text: str | UserMessage, *, media: Sequence[Media] = ()) -> Self:
        """Set the user message for this request (replaces the client's default).

        Args:
            text: What the user says.
            media: Images, audio or files to attach.
        """
        self._state.user = _user(text, media)
        return self

    def messages(self, *messages: Message | Sequence[Message]) -> Self:
        """Add messages, sent after the system message and before the user message.

        Args:
            *messages: Messages or lists of messages.
        """
        for item in messages:
            if isinstance(item, BaseModel):
                self._state.messages.append(item)
            else:
                self._state.messages.extend(item)
        return self

    def advisors(self, *advisors: object) -> Self:
        """Add advisors and advisor parameters.

        Each argument is an advisor, a dict of parameters (``{CONVERSATION_ID: "007"}``) or a
        function that sets them (``lambda a: a.param(CONVERSATION_ID, "007")``).

        Args:
            *advisors: Advisors, dicts or functions.

        Raises:
            ConfigurationError: If an argument is none of those.
        """
        _add_advisors(self._state, advisors)
        return self

    def tools(self, *tools: Tool | Callable[..., Any]) -> Self:
        """Add tools the model may call in this request.

        Args:
            *tools: ``@tool`` functions (plain functions are wrapped).
        """
        self._state.tools.extend(as_tools(tools))
        return self

    def options(self, options: ChatOptions | None = None, **fields: Any) -> Self:
        """Set model options for this request; fields set here win over the defaults.

        Args:
            options: Options to merge in.
            **fields: Option fields, such as ``temperature=0``.

        Raises:
            ConfigurationError: If a field name is unknown.
        """
        self._state.options = self._state.options.merge(_options(options, fields))
        return self


class BuilderBase:
    """The defaults part of ``ChatClient.builder()``."""

    def __init__(self) -> None:
        self._defaults = RequestState()

    def default_system(self, text: str | SystemMessage) -> Self:
        """Set the system message sent when a request sets none.

        Args:
            text: The instructions.
        """
        self._defaults.system = _system(text)
        return self

    def default_user(self, text: str | UserMessage, *, media: Sequence[Media] = ()) -> Self:
        """Set the user message sent when a request sets none.

        Args:
            text: The user text.
            media: Attachments.
        """
        self._defaults.user = _user(text, media)
        return self

    def default_advisors(self, *advisors: object) -> Self:
        """Add advisors (and parameters) used by every request.

        Args:
            *advisors: Advisors, dicts of parameters or functions setting them.
        """
        _add_advisors(self._defaults, advisors)
        return self

    def default_tools(self, *tools: Tool | Callable[..., Any]) -> Self:
        """Add tools offered to the model in every request.

        Args:
            *tools: ``@tool`` functions.
        """
        self._defaults.tools.extend(as_tools(tools))
        return self

    def default_options(self, options: ChatOptions | None = None, **fields: Any) -> Self:
        """Set options used by every request.

        Args:
            options: Options to merge in.
            **fields: Option fields, such as ``model="gpt-4o-mini"``.
        """
        self._defaults.options = self._defaults.options.merge(_options(options, fields))
        return self


def build_request(
    defaults: RequestState, state: RequestState
) -> tuple[ChatClientRequest, list[object]]:
    """Combine a client's defaults with a request spec.

    Returns:
        The request and its advisors, in chain order.

    Raises:
        ConfigurationError: If the request has no message at all.
    """
    system = state.system or defaults.system
    user = state.user or defaults.user
    messages: list[Message] = [*defaults.messages, *state.messages]
    if system is not None:
        messages.insert(0, system)
    if user is not None:
        messages.append(user)
    if not messages:
        raise ConfigurationError("the request has no message: call user() or messages()")
    tools = tool_registry([*defaults.tools, *state.tools])
    options = defaults.options
    if state.options is not _NO_OPTIONS:  # the spec set options of its own
        options = options.merge(state.options)
    prompt = Prompt(messages, options, [t.definition for t in tools.values()])
    request = ChatClientRequest(prompt, {**defaults.params, **state.params}, tools)
    return request, order_advisors([*defaults.advisors, *state.advisors])


def tool_context(request: ChatClientRequest) -> ToolContext:
    """Return what the tools of a request are told about it.

    Args:
        request: The request as it reaches the model, after every advisor.
    """
    conversation_id = request.context.get(CONVERSATION_ID)
    return ToolContext(
        conversation_id if isinstance(conversation_id, str) else None,
        MappingProxyType(dict(request.context)),
    )


def entity_format(request: ChatClientRequest, entity_type: type[Any]) -> ChatClientRequest:
    """Ask for structured output: a JSON schema of ``entity_type`` as the response format.

    Args:
        request: The request.
        entity_type: A pydantic model (or any type pydantic can describe).
    """
    schema: dict[str, JsonValue] = TypeAdapter(entity_type).json_schema()
    name = getattr(entity_type, "__name__", "entity")
    options = dataclasses.replace(
        request.prompt.options, response_format={"name": name, "schema": schema}
    )
    return request.with_prompt(dataclasses.replace(request.prompt, options=options))

"""Tools the model can call: the ``@tool`` decorator and the rules for running tool calls.

The JSON schema of a tool's arguments comes from the function's type hints (through pydantic)
and its description from the docstring; a Google-style ``Args:`` section describes the
parameters. Arguments the model sends are validated by pydantic before the function runs.

Example:
    ```python
    @tool
    def weather(city: str, unit: Literal["C", "F"] = "C") -> str:
        # The docstring (first paragraph) becomes the tool's description.
        return f"22 {unit} in {city}"

    client.prompt("Weather in London?").tools(weather).call().content()
    ```

A tool that needs to know which request called it, such as which conversation, takes a
parameter annotated :class:`ToolContext`: the client passes it in, and the model never sees
it (Spring AI's ``ToolContext``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, create_model

from chatmem.exceptions import ToolExecutionError, ToolIterationLimitError
from chatmem.messages import ToolCall
from chatmem.model import ToolDefinition

__all__ = [
    "DEFAULT_MAX_TOOL_ITERATIONS",
    "Tool",
    "ToolContext",
    "ToolErrorHandler",
    "ToolExecutionError",
    "ToolIterationLimitError",
    "as_tools",
    "default_tool_error_handler",
    "tool",
    "tool_registry",
]

DEFAULT_MAX_TOOL_ITERATIONS = 10
"""Rounds of tool calls a client runs for one request before giving up."""

ToolErrorHandler = Callable[[ToolCall, Exception], str]
"""Turns a failed tool call into the text the model sees (or raises to abort the request)."""

F = TypeVar("F", bound=Callable[..., Any])

_NO_CONTEXT: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may know about the request that called it (Spring AI's ``ToolContext``).

    A tool function receives it through a parameter annotated ``ToolContext``; that parameter
    is left out of the argument schema, so the model can neither see nor set it.

    Example:
        ```python
        @tool
        def remember(note: str, context: ToolContext) -> str:
            # The model sends only the note; the client passes the context.
            notes[context.conversation_id].append(note)
            return "noted"

        client.prompt("Note: I prefer trains").tools(remember).advisors(
            {CONVERSATION_ID: "007"}).call().content()
        ```
    """

    conversation_id: str | None = None
    """The request's conversation id (the advisor parameter ``CONVERSATION_ID``), if any."""
    context: Mapping[str, Any] = field(default_factory=lambda: _NO_CONTEXT)
    """The request context, read-only: advisor parameters and what advisors put there."""


def default_tool_error_handler(call: ToolCall, error: Exception) -> str:
    """Describe a failed tool call to the model as ``Error: <type>: <message>``.

    Args:
        call: The call that failed.
        error: What it raised (or why it could not run).
    """
    return f"Error: {type(error).__name__}: {error}"


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return the description (text before the first section) and the Args descriptions."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    index = 0
    while index < len(lines) and not _SECTION.match(lines[index]):
        description.append(lines[index])
        index += 1
    current: str | None = None
    in_args = False
    args_indent = 0
    for line in lines[index:]:
        if _SECTION.match(line):
            in_args = bool(_ARGS_HEADER.match(line))
            current = None
            continue
        if not in_args or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line)
        if match and (current is None or indent <= args_indent):
            current = match.group(1).lstrip("*")
            args_indent = indent
            args[current] = match.group(3).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), args


class Tool:
    """A function the model can call, with the JSON schema of its arguments.

    Made by :func:`tool`; calling the object calls the function.
    """

    def __init__(
        self, function: Callable[..., Any], *, name: str | None = None, description: str | None
    ) -> None:
        self.function = function
        """The wrapped function (sync or async)."""
        self.name: str = name or function.__name__
        """The name the model calls the tool by."""
        doc_description, arg_docs = _parse_docstring(function.__doc__)
        self.description: str = description or doc_description or self.name
        """What the tool does, for the model."""
        self.is_async: bool = inspect.iscoroutinefunction(function)
        """Whether the function is a coroutine function."""
        hints = get_type_hints(function)
        self.context_parameter: str | None = _context_parameter(function, self.name, hints)
        """The parameter that receives the :class:`ToolContext`, or ``None`` if it takes none."""
        self._args_model = _arguments_model(
            function, self.name, arg_docs, hints, self.context_parameter
        )
        schema = self._args_model.model_json_schema()
        schema.pop("title", None)
        self.parameters: dict[str, JsonValue] = schema
        """JSON schema of the arguments object."""
        self._result = TypeAdapter[Any](Any)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function."""
        return self.function(*args, **kwargs)

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        return ToolDefinition(self.name, self.description, self.parameters)

    def parse_arguments(self, arguments: str, context: ToolContext | None = None) -> dict[str, Any]:
        """Validate the model's JSON arguments and return them as keyword arguments.

        Args:
            arguments: The JSON text the model produced (empty means no arguments).
            context: The calling request's context, passed to a tool that takes one (an
                empty context when not given).

        Raises:
            pydantic.ValidationError: If the arguments do not match the schema.
        """
        validated = self._args_model.model_validate_json(arguments.strip() or "{}")
        parsed = {name: getattr(validated, name) for name in type(validated).model_fields}
        if self.context_parameter is not None:
            parsed[self.context_parameter] = context if context is not None else ToolContext()
        return parsed

    def format_result(self, value: object) -> str:
        """Turn what the function returned into the text the model sees.

        Text is sent as it is; anything else as JSON.

        Args:
            value: The function's return value.
        """
        if isinstance(value, str):
            return value
        return self._result.dump_json(value).decode()


def _context_parameter(
    function: Callable[..., Any], name: str, hints: dict[str, Any]
) -> str | None:
    found = [p for p in inspect.signature(function).parameters if hints.get(p) is ToolContext]
    if len(found) > 1:
        raise TypeError(f"tool {name!r}: only one parameter may take the ToolContext")
    return found[0] if found else None


def _arguments_model(
    function: Callable[..., Any],
    name: str,
    arg_docs: dict[str, str],
    hints: dict[str, Any],
    context_parameter: str | None,
) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args and **kwargs are not supported")
        if parameter.name == context_parameter:
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (
            annotation,
            Field(default, description=arg_docs.get(parameter.name)),
        )
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


@overload
def tool(function: F, /) -> Tool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], Tool]: ...


def tool(
    function: F | None = None, /, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[F], Tool]:
    """Make a function (sync or async) a tool the model can call.

    Use bare (``@tool``) or with options (``@tool(name="lookup")``).

    Args:
        function: The function; its type hints give the argument schema.
        name: The tool's name; the function's name by default.
        description: What it does; the docstring's first paragraph by default.

    Raises:
        TypeError: If the function takes ``*args`` or ``**kwargs``, or more than one
            :class:`ToolContext`.
    """
    if function is not None:
        return Tool(function, name=name, description=description)

    def wrap(fn: F) -> Tool:
        return Tool(fn, name=name, description=description)

    return wrap


def as_tools(tools: Iterable[Tool | Callable[..., Any]]) -> list[Tool]:
    """Wrap plain functions given where tools are expected.

    Args:
        tools: Tools or functions.
    """
    return [t if isinstance(t, Tool) else Tool(t, description=None) for t in tools]


def tool_registry(tools: Sequence[Tool]) -> dict[str, Tool]:
    """Index tools by name; a later tool with the same name replaces an earlier one.

    Args:
        tools: The tools.
    """
    return {t.name: t for t in tools}

"""Running the model's tool calls: one tool response message per round."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatmem import _telemetry as telemetry
from chatmem._telemetry import ENABLED as TELEMETRY
from chatmem._telemetry import active as tracing_active
from chatmem._twins import async_run_tool
from chatmem.exceptions import ConfigurationError
from chatmem.messages import ToolCall, ToolResponse, ToolResponseMessage
from chatmem.tools import Tool, ToolContext, ToolErrorHandler

__all__ = ["execute_tool_calls"]


async def execute_tool_calls(
    calls: Sequence[ToolCall],
    tools: Mapping[str, Tool],
    on_error: ToolErrorHandler,
    context: ToolContext | None = None,
) -> ToolResponseMessage:
    """Run tool calls in order and answer each of them.

    A call that fails (unknown tool, invalid arguments, the tool raised) is answered with
    what ``on_error`` returns, so the model can react; ``on_error`` may raise to abort.

    Args:
        calls: The assistant's tool calls.
        tools: The tools of the request, by name.
        on_error: Turns a failure into the response text.
        context: The request's context, for tools that take a
            :class:`~chatmem.tools.ToolContext`.
    """
    responses = []
    for call in calls:
        text = await (
            _run_traced(call, tools, on_error, context)
            if TELEMETRY and tracing_active()
            else _run_one(call, tools, on_error, context)
        )
        responses.append(ToolResponse(id=call.id, name=call.name, response_data=text))
    return ToolResponseMessage(responses=responses)


async def _run_traced(
    call: ToolCall,
    tools: Mapping[str, Tool],
    on_error: ToolErrorHandler,
    context: ToolContext | None,
) -> str:
    with telemetry.activate(telemetry.tool_span(call)) as span:
        text = await _run_one(call, tools, on_error, context, span)
        telemetry.record_tool_result(span, text)
        return text


async def _run_one(
    call: ToolCall,
    tools: Mapping[str, Tool],
    on_error: ToolErrorHandler,
    context: ToolContext | None,
    span: Any = None,
) -> str:
    selected = tools.get(call.name)
    try:
        if selected is None:
            raise LookupError(f"no tool named {call.name!r}")
        arguments = selected.parse_arguments(call.arguments, context)
        return selected.format_result(await async_run_tool(selected, arguments))
    except ConfigurationError:
        raise
    except Exception as exc:
        if span is not None:
            # The model is told and the turn goes on, but the tool's span shows the failure.
            telemetry.mark_error(span, exc)
        return on_error(call, exc)

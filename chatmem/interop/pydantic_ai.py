"""pydantic-ai ``ModelMessage`` both ways, history loading and a window history processor.

Needs ``pip install "chatmem[pydantic-ai]"`` (``pydantic-ai-slim``).

chatmem to pydantic-ai: one ``ModelMessage`` per message. System, user and tool response
messages become a ``ModelRequest`` with a ``SystemPromptPart``, a ``UserPromptPart`` (media
as ``ImageUrl``/``AudioUrl``/``VideoUrl``/``DocumentUrl`` or ``BinaryContent``) or one
``ToolReturnPart`` per result; an assistant message becomes a ``ModelResponse`` with a
``TextPart`` and one ``ToolCallPart`` per call (arguments kept as the exact text). The
creation time is the timestamp; the id, the metadata and media names travel in the
message's ``metadata["chatmem"]``, which pydantic-ai never sends to a model. So every
chatmem message round-trips exactly, except media on an assistant message (an error).

pydantic-ai to chatmem: a request's parts become one message per kind, in order (a run of
tool returns is one tool response message; retry feedback becomes the text pydantic-ai sends
the model: a tool result when it answers a call, otherwise a user message). A
``ThinkingPart`` is a :class:`~chatmem.messages.ReasoningPart` (content, id, signature,
provider, the response's model name, its place among text and tool calls; pydantic-ai's
redacted thinking is a redacted part) and a response's usage is its
:class:`~chatmem.messages.TokenUsage`, both ways. What chatmem's fields cannot hold (the
response's provider name, run ids, built-in tool and compaction parts, structured tool
return values, retry details) is kept as the message's JSON under
``metadata["pydantic_ai"]`` and given back while the content is unchanged. A request holding
several kinds of parts comes back as consecutive requests, which pydantic-ai merges before
calling a model.

Example:
    ```python
    from chatmem import AssistantMessage, UserMessage
    from chatmem.interop.pydantic_ai import from_pydantic_ai, to_pydantic_ai

    messages = [UserMessage("Hi"), AssistantMessage("Hello!")]
    model_messages = to_pydantic_ai(messages)
    assert [m.kind for m in model_messages] == ["request", "response"]
    assert from_pydantic_ai(model_messages) == messages
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.interop._pydantic_ai_convert import STASH_KEY, from_pydantic_ai, to_pydantic_ai

if TYPE_CHECKING:
    from chatmem.interop._pydantic_ai_history import (
        aload_history,
        asave_new_messages,
        load_history,
        save_new_messages,
        window_processor,
    )

__all__ = [
    "STASH_KEY",
    "aload_history",
    "asave_new_messages",
    "from_pydantic_ai",
    "load_history",
    "save_new_messages",
    "to_pydantic_ai",
    "window_processor",
]

_HISTORY = frozenset(
    {"aload_history", "asave_new_messages", "load_history", "save_new_messages", "window_processor"}
)


def __getattr__(name: str) -> object:
    # The history side imports the repository machinery: only when it is asked for.
    if name in _HISTORY:
        from chatmem.interop import _pydantic_ai_history

        return getattr(_pydantic_ai_history, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

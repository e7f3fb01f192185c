"""LangChain ``BaseMessage`` both ways, and a chat message history backed by chatmem.

Needs ``pip install "chatmem[langchain]"`` (``langchain-core``).

chatmem to LangChain: system, user and assistant messages become ``SystemMessage``,
``HumanMessage`` and ``AIMessage`` (tool calls in ``tool_calls``, arguments that are not a
JSON object in ``invalid_tool_calls``); a tool response message becomes one ``ToolMessage``
per result, with the call id and tool name. Media become LangChain's standard ``image``,
``audio``, ``video`` and ``file`` content blocks. The message id is the LangChain id; the
creation time, the metadata, and what LangChain would reshape (argument formatting, the
grouping of tool results) travel in ``additional_kwargs["chatmem"]``, which chat model
integrations do not send to the provider. So every chatmem message round-trips exactly.

Reasoning parts are LangChain's standard ``reasoning`` content blocks (signature in
``extras``, provider and model in ``response_metadata``, redacted thinking a ``non_standard``
block, provider items ``non_standard`` blocks), in their place among text and tool calls;
token usage is ``usage_metadata``. LangChain to chatmem also reads the older forms
integrations write (``thinking`` and ``redacted_thinking`` blocks, Responses ``reasoning``
items, ``reasoning_content``). What chatmem's fields cannot hold (other
``response_metadata``, ``artifact``, a tool ``status``, other provider-specific content
blocks, a ``name``) is kept as the original message's JSON under ``metadata["langchain"]``,
and given back as it was while the message's content is unchanged. A message LangChain gave
no id gets chatmem's.

What cannot be held (a :class:`~chatmem.interop.ConversionError` unless ``lossy=True``):
LangChain fields that are not JSON (bytes in ``additional_kwargs``, an ``artifact`` object),
and message types other than system, human, AI and tool (``ChatMessage``, ``FunctionMessage``
and chunks are accepted as their role where they have one).

Example:
    ```python
    from chatmem import AssistantMessage, UserMessage
    from chatmem.interop.langchain import from_langchain, to_langchain

    messages = [UserMessage("Hi"), AssistantMessage("Hello!")]
    lc = to_langchain(messages)
    assert [m.type for m in lc] == ["human", "ai"]
    assert from_langchain(lc) == messages
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.interop._common import ENVELOPE_KEY
from chatmem.interop._langchain_convert import STASH_KEY, from_langchain, to_langchain
from chatmem.interop._langchain_convert import usage_in as usage_from_langchain
from chatmem.interop._langchain_convert import usage_out as usage_to_langchain

if TYPE_CHECKING:
    from chatmem.interop._langchain_history import ChatmemMessageHistory

__all__ = [
    "ENVELOPE_KEY",
    "STASH_KEY",
    "ChatmemMessageHistory",
    "from_langchain",
    "to_langchain",
    "usage_from_langchain",
    "usage_to_langchain",
]

_HISTORY = frozenset({"ChatmemMessageHistory"})


def __getattr__(name: str) -> object:
    # The history side imports the repository machinery: only when it is asked for.
    if name in _HISTORY:
        from chatmem.interop import _langchain_history

        return getattr(_langchain_history, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""LlamaIndex ``ChatMessage`` both ways, and chat stores backed by chatmem repositories.

Needs ``pip install "chatmem[llama-index]"`` (``llama-index-core``).

chatmem to LlamaIndex: system, user and assistant messages become ``ChatMessage`` objects of
those roles with ``TextBlock``, ``ImageBlock``, ``AudioBlock``, ``VideoBlock`` and
``DocumentBlock`` blocks and one ``ToolCallBlock`` per tool call (``tool_kwargs`` a dict when
``json.dumps`` gives the exact arguments back, the text otherwise); a tool response message
becomes one ``tool`` message per result, with ``additional_kwargs["tool_call_id"]`` as
LlamaIndex's agents write it.

What LlamaIndex cannot hold (a :class:`~chatmem.interop.ConversionError` unless
``lossy=True``, which leaves it out): message ids and creation times (never held; the way
back makes new ones) and metadata, because LLM integrations send ``additional_kwargs`` to the
provider; a tool result's name when it differs from its call's, or a result whose call is
not in the same list; two tool response messages in a row; names of images, audio and video;
a document named ``input_document`` (LlamaIndex's default title); audio types whose format
name does not give the MIME type back; provider items and token usage. Reasoning parts are
``ThinkingBlock`` s, the signature in ``additional_information["signature"]``, in their place
among text and tool calls.

LlamaIndex to chatmem: a run of ``tool`` messages becomes one tool response message. What
chatmem's fields cannot hold (other ``additional_kwargs``, citation blocks, several text
blocks) is kept as the message's JSON under ``metadata["llama_index"]`` and given
back while the content is unchanged.

Example:
    ```python
    from chatmem import AssistantMessage, UserMessage
    from chatmem.interop.llama_index import from_llama_index, to_llama_index

    messages = to_llama_index([UserMessage("Hi"), AssistantMessage("Hello!")])
    assert [(m.role.value, m.content) for m in messages] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
    ]
    assert [m.text for m in from_llama_index(messages)] == ["Hi", "Hello!"]
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.interop._llama_index_convert import STASH_KEY, from_llama_index, to_llama_index

if TYPE_CHECKING:
    from chatmem.interop._llama_index_store import ChatmemChatStore, ChatmemDBChatStore

__all__ = [
    "STASH_KEY",
    "ChatmemChatStore",
    "ChatmemDBChatStore",
    "from_llama_index",
    "to_llama_index",
]

_HISTORY = frozenset({"ChatmemChatStore", "ChatmemDBChatStore"})


def __getattr__(name: str) -> object:
    # The history side imports the repository machinery: only when it is asked for.
    if name in _HISTORY:
        from chatmem.interop import _llama_index_store

        return getattr(_llama_index_store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

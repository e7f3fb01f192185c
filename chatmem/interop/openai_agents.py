"""The OpenAI Agents SDK's session over any chatmem repository.

Needs ``pip install "chatmem[openai-agents]"`` (``openai-agents``).

:class:`ChatmemSession` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``) over any
:class:`~chatmem.repository.AsyncSessionLog`, so an agent's history lives in the database
chatmem already uses, as chatmem messages that its memories, ``chatmem show``, history
search and the other converters read.

What is stored how, one chatmem message per item:

- a ``message`` item of the user: a :class:`~chatmem.messages.UserMessage`;
- a ``message`` item of the assistant: an :class:`~chatmem.messages.AssistantMessage` with
  its text;
- a ``reasoning`` item: an assistant message holding one
  :class:`~chatmem.messages.ReasoningPart` (summary as text, ``encrypted_content`` as
  signature, provider ``openai``);
- a ``function_call`` item: an assistant message holding one
  :class:`~chatmem.messages.ToolCall`;
- a ``function_call_output`` item: a :class:`~chatmem.messages.ToolResponseMessage` named
  after its call;
- any other item (``compaction``, developer and system messages, hosted tool calls, types
  the SDK adds later): an assistant message holding it as a
  :class:`~chatmem.messages.ProviderItem`, sent back verbatim to the Responses API only;
- a dict that is no Responses item (neither ``type`` nor ``role``, as the envelopes of the
  SDK's ``EncryptedSession``): the same, with provider :data:`OPAQUE_PROVIDER`, sent to no
  model.

Where a message does not give its item back exactly (the ``status`` field, annotations, an
item without ``type``...), the item is also kept verbatim in the message's
``metadata["openai_responses"]["item"]``: ``get_items`` returns every item equal to the
dict that was added. An item's ``id`` is its message's id, so adding an item again stores
it once.

Example:
    ```python
    from agents import Agent, Runner

    from chatmem_repositories import create_async_repository
    from chatmem.interop.openai_agents import ChatmemSession

    repository = create_async_repository("sqlite:///agents.db")
    session = ChatmemSession("user-42", repository)
    result = await Runner.run(Agent(name="Assistant"), "Hello", session=session)
    ```
"""

from __future__ import annotations

from chatmem.interop._common import require

require("agents", "openai-agents")

from chatmem.interop._openai_agents_items import ITEM_KEY, OPAQUE_PROVIDER  # noqa: E402
from chatmem.interop._openai_agents_session import ChatmemSession  # noqa: E402

__all__ = ["ITEM_KEY", "OPAQUE_PROVIDER", "ChatmemSession"]

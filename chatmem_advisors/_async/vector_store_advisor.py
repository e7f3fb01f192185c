"""The advisor that gives a chat client long-term memory from a vector store."""

from __future__ import annotations

from chatmem.advisor import DEFAULT_CHAT_MEMORY_ORDER, ChatClientRequest, ChatClientResponse
from chatmem.backend import AsyncTwin, check_flavor
from chatmem.client import AsyncAdvisorChain, AsyncBaseAdvisor
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.memory import CONVERSATION_ID, AsyncChatMemory
from chatmem.messages import UserMessage
from chatmem.telemetry import store_operation
from chatmem.vector_store import AsyncVectorStore
from chatmem_advisors._long_term import (
    augment_system,
    conversation_filter,
    documents_to_store,
    last_user_text,
    render_long_term_memory,
    top_k_of,
)
from chatmem_advisors._rules import conversation_id_of

__all__ = ["AsyncVectorStoreChatMemoryAdvisor"]


class AsyncVectorStoreChatMemoryAdvisor(AsyncBaseAdvisor):
    """Recalls the past messages of a conversation most relevant to the new question.

    Before the call, the newest user message is the query of a similarity search filtered
    to the request's conversation (and to its owner, for ids made with
    :func:`~chatmem.scoped_conversation_id`); the entries found are added to the system
    prompt in a delimited, escaped long-term memory section. After a complete answer, the
    user message and the final assistant answer are embedded and stored with the
    conversation id, owner, type and time. A failed call or abandoned stream stores nothing.

    Use it beside :class:`AsyncMessageChatMemoryAdvisor`, which keeps the recent window: the
    default ``order`` runs this advisor right after it, so the window's system message is
    the one that gets the section.

    Example:
        ```python
        client = (AsyncChatClient.builder(model)
                  .default_advisors(AsyncMessageChatMemoryAdvisor(memory),
                                    AsyncVectorStoreChatMemoryAdvisor(store, top_k=5))
                  .build())
        await client.prompt().user("My dog?").advisors({CONVERSATION_ID: "c1"}).call()
        ```

    Args:
        vector_store: Where entries are stored and searched.
        top_k: Entries retrieved per request; ``VECTOR_STORE_TOP_K`` in the context overrides.
        score_threshold: Lowest similarity score retrieved, in ``[0, 1]``.
        chat_memory: A chat memory that :meth:`clear` clears too.
        order: Position in the chain; right after the message memory advisor by default.
        conversation_id_key: The context key holding the conversation id.

    Raises:
        ConfigurationError: If ``top_k`` or ``score_threshold`` is out of range or a
            collaborator is of the other flavor.
    """

    def __init__(
        self,
        vector_store: AsyncVectorStore,
        *,
        top_k: int = 20,
        score_threshold: float = 0.0,
        chat_memory: AsyncChatMemory | None = None,
        order: int = DEFAULT_CHAT_MEMORY_ORDER + 1,
        conversation_id_key: str = CONVERSATION_ID,
    ) -> None:
        check_flavor(vector_store, "add", is_async=AsyncTwin.IS_ASYNC, role="vector store")
        if chat_memory is not None:
            check_flavor(chat_memory, "get", is_async=AsyncTwin.IS_ASYNC, role="chat memory")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 10_000:
            raise ConfigurationError(f"top_k must be an int from 1 to 10000, got {top_k!r}")
        if not isinstance(score_threshold, int | float) or not 0 <= score_threshold <= 1:
            raise ConfigurationError(f"score_threshold must be in [0, 1], got {score_threshold!r}")
        super().__init__(order=order)
        self.vector_store = vector_store
        """Where entries are stored and searched."""
        self.top_k = top_k
        """Entries retrieved per request unless the request overrides it."""
        self.score_threshold = float(score_threshold)
        """Lowest similarity score retrieved."""
        self.chat_memory = chat_memory
        """A chat memory cleared with the vectors, if any."""
        self.conversation_id_key = conversation_id_key
        """The context key holding the conversation id."""
        self._state_key = f"chatmem.vector_store_advisor.{id(self)}"

    async def before(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientRequest:
        """Retrieve the conversation's relevant entries and add them to the system prompt.

        Args:
            request: The request.
            chain: The rest of the chain.

        Raises:
            MissingConversationIdError: If the context has no valid conversation id.
            ConfigurationError: If the request's top-k override is invalid.
        """
        conversation_id = conversation_id_of(request.context, self.conversation_id_key)
        top_k = top_k_of(request.context, self.top_k)
        messages = request.prompt.messages
        user = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        query = last_user_text(messages)
        if query is not None:
            with store_operation(
                self.vector_store,
                "similarity_search",
                collection="vector_store",
                attributes={"chatmem.vector.top_k": top_k},
            ) as span:
                found = await self.vector_store.similarity_search(
                    query,
                    top_k=top_k,
                    score_threshold=self.score_threshold,
                    where=conversation_filter(conversation_id),
                )
                if span is not None:
                    span.set_attribute("chatmem.vector.result_count", len(found))
            messages = augment_system(messages, render_long_term_memory(found))
        return request.with_messages(messages).with_context(
            **{self._state_key: (conversation_id, user)}
        )

    async def after(
        self, response: ChatClientResponse, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Store the user message and the final answer of the turn.

        Args:
            response: The complete response.
            chain: The rest of the chain.
        """
        conversation_id, user = response.context[self._state_key]
        documents = documents_to_store(conversation_id, user, response.chat_response)
        if documents:
            with store_operation(self.vector_store, "add", collection="vector_store"):
                await self.vector_store.add(documents)
        return response

    async def clear(self, conversation_id: str) -> int:
        """Delete a conversation's entries (and its chat memory, if one was given).

        Args:
            conversation_id: The conversation.

        Returns:
            How many entries were deleted.
        """
        validate_conversation_id(conversation_id)
        if self.chat_memory is not None:
            await self.chat_memory.clear(conversation_id)
        return await self.vector_store.delete_where(conversation_filter(conversation_id))

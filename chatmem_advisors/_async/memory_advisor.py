"""The advisor that gives a chat client memory."""

from __future__ import annotations

from chatmem.advisor import DEFAULT_CHAT_MEMORY_ORDER, ChatClientRequest, ChatClientResponse
from chatmem.backend import AsyncTwin, async_sleep, check_flavor
from chatmem.client import AsyncAdvisorChain, AsyncBaseAdvisor
from chatmem.exceptions import ConfigurationError, RepositoryOutcomeUnknownError
from chatmem.memory import CONVERSATION_ID, AsyncChatMemory
from chatmem_advisors._rules import conversation_id_of, messages_to_save, messages_to_send

__all__ = ["AsyncMessageChatMemoryAdvisor"]

_SAVE_BACKOFF_SECONDS = 0.2


class AsyncMessageChatMemoryAdvisor(AsyncBaseAdvisor):
    """Loads a conversation's memory before the model call and saves the turn after it.

    Example:
        ```python
        client = (AsyncChatClient.builder(model)
                  .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
                  .build())
        await client.prompt().user("Hi").advisors({CONVERSATION_ID: "007"}).call().content()
        ```

    The rules:

    - The conversation id comes from the request context (``CONVERSATION_ID``); missing or
      invalid, :class:`~chatmem.MissingConversationIdError` is raised before the model is
      called. There is no default conversation.
    - Memory is read once per request. Sent: the prompt's system message (memory's stored one
      only if the prompt has none), memory's messages, then the prompt's new messages.
    - The prompt's system message is not saved (as in Spring AI); memory holds the dialogue.
    - After a complete answer, the new user message and every message the exchange produced
      (assistant tool calls, tool responses, final answer) are saved in one ``add``.
    - A failed call or an abandoned stream saves nothing, not even the user message: a turn
      is stored whole or not at all, so a retry never duplicates the question.
    - A save whose outcome the repository cannot know
      (:class:`~chatmem.RepositoryOutcomeUnknownError`) is sent again with the same messages
      (the same ids, so it is stored exactly once), up to ``save_attempts`` times in all,
      before the error is raised.

    Args:
        chat_memory: Any chat memory (``add``/``get``/``clear``).
        order: Position in the chain; early by default so later advisors see the memory.
        conversation_id_key: The context key holding the conversation id.
        save_attempts: How many times a turn's save is sent while its outcome is unknown.
    """

    def __init__(
        self,
        chat_memory: AsyncChatMemory,
        *,
        order: int = DEFAULT_CHAT_MEMORY_ORDER,
        conversation_id_key: str = CONVERSATION_ID,
        save_attempts: int = 3,
    ) -> None:
        check_flavor(chat_memory, "get", is_async=AsyncTwin.IS_ASYNC, role="chat memory")
        super().__init__(order=order)
        self.chat_memory = chat_memory
        """The memory read and written."""
        self.conversation_id_key = conversation_id_key
        """The context key holding the conversation id."""
        if save_attempts < 1:
            raise ConfigurationError(f"save_attempts must be at least 1, not {save_attempts}")
        self.save_attempts = save_attempts
        """How many times a turn's save is sent while its outcome is unknown."""
        self._state_key = f"chatmem.memory_advisor.{id(self)}"

    async def before(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientRequest:
        """Check the conversation id, load memory and put it in front of the new messages.

        Args:
            request: The request.
            chain: The rest of the chain.

        Raises:
            MissingConversationIdError: If the context has no valid conversation id.
        """
        conversation_id = conversation_id_of(request.context, self.conversation_id_key)
        memory = await self.chat_memory.get(conversation_id)
        messages, new = messages_to_send(memory, request.prompt.messages)
        return request.with_messages(messages).with_context(
            **{self._state_key: (conversation_id, new)}
        )

    async def after(
        self, response: ChatClientResponse, chain: AsyncAdvisorChain
    ) -> ChatClientResponse:
        """Save the new messages and everything the exchange produced, in one add.

        Args:
            response: The complete response.
            chain: The rest of the chain.
        """
        conversation_id, new = response.context[self._state_key]
        turn = messages_to_save(new, response.chat_response)
        attempt = 1
        while True:
            try:
                await self.chat_memory.add(conversation_id, turn)
                return response
            except RepositoryOutcomeUnknownError:
                # The same message objects keep their ids, so sending them again stores
                # the turn exactly once, whether or not the lost attempt was applied.
                if attempt >= self.save_attempts:
                    raise
            await async_sleep(_SAVE_BACKOFF_SECONDS * attempt)
            attempt += 1

"""Searching stored history: the search and the tool that lets the model run it."""

from __future__ import annotations

from chatmem._async.repository import AsyncChatMemoryLog
from chatmem._history_search import (
    MAX_QUERY_LENGTH,
    SEARCHED_TYPES,
    HistoryHit,
    HistorySearchLimits,
    HistorySearchResult,
    hit_text,
    other_conversations,
    render_search_result,
)
from chatmem._twins import AsyncTwin, check_flavor
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.tools import Tool, ToolContext

__all__ = ["AsyncHistorySearch", "async_history_search_tool"]

# Pages read per conversation: each page may hold the search tool's own calls and results,
# which are skipped, so one page may not be enough; a bound keeps a search's reads bounded.
_MAX_PAGES = 4

_DESCRIPTION = (
    "Search what was said earlier in this conversation, including messages too old to be "
    "shown to you, for a word or phrase (matched as written, ignoring case). Returns the "
    "stored messages that contain it as quoted data."
)
_OWNER_DESCRIPTION = (
    "Search what was said earlier in this conversation and in the same user's other "
    "conversations, including messages too old to be shown to you, for a word or phrase "
    "(matched as written, ignoring case). Returns the stored messages that contain it as "
    "quoted data, each naming its conversation."
)


class AsyncHistorySearch:
    """Searches a conversation's stored history, and optionally its owner's other conversations.

    The whole stored history is searched, including messages older than any memory window;
    messages deleted from the repository (evicted, expired) are gone. Only user, assistant and
    tool messages are read, and the search tool's own calls and results are skipped.

    Example:
        ```python
        search = AsyncHistorySearch(repository, include_owner_conversations=True)
        result = await search.search(scoped_conversation_id("alice", "trip"), "Lisbon")
        await client.prompt("Where did I want to go?").tools(search.as_tool()).advisors(
            {CONVERSATION_ID: scoped_conversation_id("alice", "trip")}).call().content()
        ```

    Args:
        repository: The log the conversations are stored in (the memory's repository).
        include_owner_conversations: Also search the other conversations of the current
            conversation's owner (see :func:`~chatmem.conversation_ids.owner_of`). Never
            those of another owner; a conversation without an owner searches only itself.
        max_results: Most hits a search returns (1 to 100).
        max_result_chars: Most characters quoted of one hit (20 to 100,000); a longer
            message is cut around the first match, and marked where it was cut.
        max_conversations: Most conversations a search reads, the current one included
            (1 to 1000).
        tool_name: The name of the tool :meth:`as_tool` makes; its calls and results are
            left out of every search.

    Raises:
        ConfigurationError: If the repository is not a log of this flavor, or a bound is out
            of range.
    """

    def __init__(
        self,
        repository: AsyncChatMemoryLog,
        *,
        include_owner_conversations: bool = False,
        max_results: int = 5,
        max_result_chars: int = 500,
        max_conversations: int = 10,
        tool_name: str = "search_history",
    ) -> None:
        check_flavor(
            repository, "find_history", is_async=AsyncTwin.IS_ASYNC, role="chat memory log"
        )
        self.repository = repository
        """The log searched."""
        self.include_owner_conversations = include_owner_conversations
        """Whether the owner's other conversations are searched too."""
        self.limits = HistorySearchLimits(max_results, max_result_chars, max_conversations)
        """The bounds of every search."""
        self.tool_name = tool_name
        """The tool's name; its own calls and results are never hits."""

    async def search(self, conversation_id: str, query: str) -> HistorySearchResult:
        """Find stored messages that contain ``query``, ignoring case.

        The current conversation is read first, then (when enabled) the owner's others in
        the order the repository lists them, until ``max_results`` hits are found.

        Args:
            conversation_id: The current conversation.
            query: The text to look for.

        Raises:
            InvalidConversationIdError: If the conversation id is not valid.
            ValueError: If the query is blank or longer than 200 characters.
        """
        validate_conversation_id(conversation_id)
        # ValueError, not ConfigurationError: called by the tool, the model is told and the
        # request goes on.
        if not query.strip():
            raise ValueError("the search query must not be blank")
        if len(query) > MAX_QUERY_LENGTH:
            raise ValueError(f"the search query must be at most {MAX_QUERY_LENGTH} characters")
        hits: list[HistoryHit] = []
        wanted = self.limits.max_results
        for searched in await self._conversations(conversation_id):
            if not await self._read(searched, query, hits):
                return HistorySearchResult(conversation_id, hits[:wanted], more=True)
        return HistorySearchResult(conversation_id, hits, more=False)

    async def _read(self, conversation_id: str, query: str, hits: list[HistoryHit]) -> bool:
        """Add one conversation's hits; return False once more match than are wanted."""
        wanted = self.limits.max_results
        # One more than wanted tells whether more match.
        limit = wanted + 1
        after = None
        for _ in range(_MAX_PAGES):
            page = await self.repository.find_history(
                conversation_id, types=SEARCHED_TYPES, text=query, after=after, limit=limit
            )
            for stored in page:
                text = hit_text(stored.message, query, self.tool_name)
                if text is not None:
                    hits.append(HistoryHit(conversation_id, stored.position, stored.message, text))
            if len(hits) > wanted:
                return False
            if len(page) < limit:
                return True
            after = page[-1].position
        return False  # stopped reading: more may match

    async def _conversations(self, conversation_id: str) -> list[str]:
        owner = owner_of(conversation_id)
        others = self.limits.max_conversations - 1
        if not self.include_owner_conversations or owner is None or others == 0:
            return [conversation_id]
        # One more than needed: the current conversation is usually on the page too.
        page = await self.repository.list_conversations(owner=owner, limit=others + 1)
        return [
            conversation_id,
            *other_conversations(conversation_id, page.conversation_ids, others),
        ]

    def as_tool(self) -> Tool:
        """Return a tool the model calls with a query to search the current conversation.

        The conversation comes from the request (the advisor parameter ``CONVERSATION_ID``,
        through :class:`~chatmem.tools.ToolContext`), never from the model. The tool is
        named :attr:`tool_name`.
        """
        search = self
        name = self.tool_name
        owner_wide = self.include_owner_conversations

        async def search_history(query: str, context: ToolContext) -> str:
            """Search the stored history.

            Args:
                query: A word or phrase to look for (at most 200 characters).
                context: The calling request, passed by the client (not in the schema).
            """
            if context.conversation_id is None:
                raise ConfigurationError(
                    f"tool {name!r} needs the request's conversation id: pass it with "
                    ".advisors({CONVERSATION_ID: ...})"
                )
            result = await search.search(context.conversation_id, query)
            return render_search_result(
                result, query, search.limits.max_result_chars, labelled=owner_wide
            )

        description = _OWNER_DESCRIPTION if owner_wide else _DESCRIPTION
        return Tool(search_history, name=name, description=description)


def async_history_search_tool(
    repository: AsyncChatMemoryLog,
    *,
    include_owner_conversations: bool = False,
    max_results: int = 5,
    max_result_chars: int = 500,
    max_conversations: int = 10,
    name: str = "search_history",
) -> Tool:
    """Return a tool the model calls to search what was said earlier in the conversation.

    The conversation is the request's (``CONVERSATION_ID``); the model only sends a query.
    Hits come back as quoted data, one JSON line each, so text stored in a message reaches
    the model as a string, never as instructions. See :class:`AsyncHistorySearch` for what
    is searched.

    Example:
        ```python
        client = (AsyncChatClient.builder(model)
                  .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
                  .default_tools(async_history_search_tool(repository))
                  .build())
        await client.prompt("Which hotel did we pick?").advisors(
            {CONVERSATION_ID: "007"}).call().content()
        ```

    Args:
        repository: The log the conversations are stored in (the memory's repository).
        include_owner_conversations: Also search the same owner's other conversations.
        max_results: Most hits one call returns (1 to 100).
        max_result_chars: Most characters quoted of one hit (20 to 100,000).
        max_conversations: Most conversations one call reads, the current one included.
        name: The tool's name.

    Raises:
        ConfigurationError: If the repository is not a log of this flavor, or a bound is out
            of range.
    """
    search = AsyncHistorySearch(
        repository,
        include_owner_conversations=include_owner_conversations,
        max_results=max_results,
        max_result_chars=max_result_chars,
        max_conversations=max_conversations,
        tool_name=name,
    )
    return search.as_tool()

"""The summarizing memory: turns that leave the window are folded into a running summary."""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Sequence

from chatmem._async.memory import (
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
    _as_list,
)
from chatmem._async.model import AsyncChatModel
from chatmem._async.repository import AsyncChatMemoryLog, AsyncSummaryStore
from chatmem._background import AsyncBackground
from chatmem._records import Position, StoredMessage
from chatmem._summaries import (
    DEFAULT_SUMMARY_PROMPT,
    ConversationSummary,
    fit_to_budget,
    render_evicted,
    summary_message,
)
from chatmem._twins import AsyncLock, AsyncTwin, check_flavor
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, MessageType, SystemMessage, UserMessage
from chatmem.model import ChatOptions, Prompt
from chatmem.tokens import CharacterTokenEstimator, TokenEstimator
from chatmem.window import split_turns

__all__ = ["AsyncSummarizingChatMemory"]

logger = logging.getLogger("chatmem.summarizing")

_CHAT_TYPES = (MessageType.USER, MessageType.ASSISTANT, MessageType.TOOL)
# Rounds of one fold: each round folds up to max_turns_per_call turns, or re-reads after
# losing a version-checked write to another process.
_MAX_ROUNDS = 8


class AsyncProcessSummaries:
    """The fallback summary store: this process's memory, shared per repository object."""

    def __init__(self) -> None:
        self._summaries: dict[str, ConversationSummary] = {}
        self._lock = AsyncLock()

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        async with self._lock:
            return self._summaries.get(conversation_id)

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        async with self._lock:
            current = self._summaries.get(conversation_id)
            if (current.version if current else 0) != expected_version:
                return False
            self._summaries[conversation_id] = ConversationSummary(
                text, covers, expected_version + 1
            )
            return True

    def forget(self, conversation_id: str) -> None:
        self._summaries.pop(conversation_id, None)


# Memories over the same repository object share one fallback store, so two memories in one
# process still never fold the same turns twice.
_process_summaries: weakref.WeakKeyDictionary[object, AsyncProcessSummaries] = (
    weakref.WeakKeyDictionary()
)


class AsyncSummarizingChatMemory:
    """A window memory whose evicted turns are folded into a durable running summary.

    ``get`` returns the system message, then the summary as one quoted section (in a user
    message, so it survives a prompt's own system message and is never mistaken for
    instructions), then the window. After each ``add``, the whole turns that left the window
    since the summary was last written are sent to ``model`` with the previous summary,
    and only those: the cost of each call grows with the turns evicted, never with the
    history. Tool calls travel with their results.

    By default summarizing runs in the background (a task on the running loop; in the sync
    twin, one worker thread), so a turn never waits for the model. A failing or slow
    summarizer never fails or loses a turn: the error is logged, the window alone (and the
    summary as it was) is used meanwhile, and the same turns are retried after a later
    ``add``. With ``background=False`` each ``add`` summarizes before returning (errors are
    still logged, not raised), so ``get`` is always current.

    The summary is stored through the repository when it implements
    :class:`~chatmem.repository.AsyncSummaryStore`, with the position of the last message
    it covers and a version: the write is version-checked, so two processes never lose an
    update or fold a turn twice. Otherwise it is kept in this process's memory only (shared
    by memories over the same repository object), lost on restart, and rebuilt from the
    history as turns leave the window afterwards (only turns evicted after the restart).

    Example:
        ```python
        window = AsyncMessageWindowChatMemory(max_messages=20)
        memory = AsyncSummarizingChatMemory(window, model)
        await memory.add("007", UserMessage("My name is James Bond"))
        await memory.get("007")
        await memory.aclose()
        ```

    Args:
        memory: The window memory whose evicted turns are summarized; it must not evict
            (the turns are read back from the history) and its repository must be a log.
        model: The chat model that writes the summary.
        max_summary_tokens: The summary's token budget: told to the model, set as the
            request's ``max_tokens``, and enforced by cutting the reply at a word.
        prompt: The summarizer's instructions; ``{max_tokens}`` is replaced by the budget.
        background: Summarize after ``add`` returns (the default) instead of before.
        max_turns_per_call: At most this many evicted turns per summarizer call; more
            (after an outage) are folded in several calls.
        token_estimator: Counts summary tokens; 4 characters per token by default.

    Raises:
        ConfigurationError: If the window memory evicts, its repository is not a log, or a
            number is less than 1.
    """

    def __init__(
        self,
        memory: AsyncMessageWindowChatMemory | AsyncTokenWindowChatMemory,
        model: AsyncChatModel,
        *,
        max_summary_tokens: int = 500,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        background: bool = True,
        max_turns_per_call: int = 20,
        token_estimator: TokenEstimator | None = None,
    ) -> None:
        check_flavor(memory, "get", is_async=AsyncTwin.IS_ASYNC, role="window memory")
        check_flavor(model, "call", is_async=AsyncTwin.IS_ASYNC, role="chat model")
        if not isinstance(memory, AsyncMessageWindowChatMemory | AsyncTokenWindowChatMemory):
            raise ConfigurationError(
                f"a summarizing memory wraps a message or token window memory, "
                f"got {type(memory).__name__}"
            )
        if memory.evict:
            raise ConfigurationError(
                "a summarizing memory reads evicted turns back from the history: "
                "use a window memory with evict=False"
            )
        if not isinstance(memory.repository, AsyncChatMemoryLog):
            raise ConfigurationError(
                "a summarizing memory needs a repository with the log capabilities "
                "(every built-in backend has them)"
            )
        for name, value in (
            ("max_summary_tokens", max_summary_tokens),
            ("max_turns_per_call", max_turns_per_call),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {value!r}")
        self.memory = memory
        """The window memory."""
        self.model = model
        """The summarizer."""
        self.max_summary_tokens = max_summary_tokens
        """The summary's token budget."""
        self.prompt = prompt
        """The summarizer's instructions."""
        self.background = background
        """Whether summarizing runs after ``add`` returns."""
        self.max_turns_per_call = max_turns_per_call
        """At most this many turns per summarizer call."""
        self.token_estimator = token_estimator or CharacterTokenEstimator()
        """Counts summary tokens."""
        self.repository = memory.repository
        """The repository holding the history (and the summary, if it can)."""
        self._log: AsyncChatMemoryLog = memory.repository
        self._summaries: AsyncSummaryStore
        self._local: AsyncProcessSummaries | None = None
        if isinstance(memory.repository, AsyncSummaryStore):
            self._summaries = memory.repository
        else:
            local = _process_summaries.setdefault(memory.repository, AsyncProcessSummaries())
            self._summaries = self._local = local
        self._background = AsyncBackground()
        # The rendered section of recent summaries, so get() builds the message only when a
        # new summary appears (the text is compared: a cleared conversation reuses versions).
        self._rendered: OrderedDict[tuple[str, int], tuple[str, UserMessage]] = OrderedDict()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.memory!r}, max_summary_tokens="
            f"{self.max_summary_tokens}, background={self.background})"
        )

    @property
    def durable(self) -> bool:
        """Whether the summary is stored through the repository (else in process only)."""
        return self._local is None

    # -- the ChatMemory API ---------------------------------------------------------------------

    async def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Store messages, then fold the turns that left the window into the summary.

        The messages are stored first; summarizing never makes this fail.

        Args:
            conversation_id: The conversation.
            messages: One message or several, in order.
        """
        batch = _as_list(messages)
        await self.memory.add(conversation_id, batch)
        if self.background:
            self._background.start(conversation_id, lambda: self._fold_quietly(conversation_id))
        else:
            await self._fold_quietly(conversation_id)

    async def get(self, conversation_id: str) -> list[Message]:
        """Return the system message, the summary section (if any), then the window.

        Args:
            conversation_id: The conversation.
        """
        messages = await self.memory.get(conversation_id)
        summary = await self._summaries.find_summary(conversation_id)
        if summary is None or not summary.text:
            return messages
        key = (conversation_id, summary.version)
        cached = self._rendered.get(key)
        if cached is not None and cached[0] == summary.text:
            section = cached[1]
        else:
            section = summary_message(conversation_id, summary)
            self._rendered[key] = (summary.text, section)
            if len(self._rendered) > _RENDERED:
                self._rendered.popitem(last=False)
        at = 1 if messages and isinstance(messages[0], SystemMessage) else 0
        return [*messages[:at], section, *messages[at:]]

    async def clear(self, conversation_id: str) -> None:
        """Delete the conversation's history and its summary.

        Args:
            conversation_id: The conversation.
        """
        await self.memory.clear(conversation_id)
        if self._local is not None:
            self._local.forget(conversation_id)

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the stored summary, or ``None``.

        Args:
            conversation_id: The conversation.
        """
        validate_conversation_id(conversation_id)
        return await self._summaries.find_summary(conversation_id)

    async def summarize(self, conversation_id: str) -> ConversationSummary | None:
        """Fold every turn that has left the window into the summary now.

        Unlike the folding after ``add``, a summarizer error is raised.

        Args:
            conversation_id: The conversation.

        Returns:
            The summary afterwards, or ``None`` if nothing has left the window yet.
        """
        validate_conversation_id(conversation_id)
        await self._fold(conversation_id)
        return await self._summaries.find_summary(conversation_id)

    async def flush(self) -> None:
        """Wait until background summarizing started by ``add`` has finished."""
        await self._background.drain()

    async def aclose(self) -> None:
        """Wait for background summarizing; the repository stays open (its owner closes it)."""
        await self._background.aclose()

    async def __aenter__(self) -> AsyncSummarizingChatMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- folding --------------------------------------------------------------------------------

    async def _fold_quietly(self, conversation_id: str) -> None:
        try:
            await self._fold(conversation_id)
        except Exception:
            # The turn is stored and the window still works; the same turns stay pending
            # and the next add retries them.
            logger.warning(
                "summarizing conversation %r failed; retried after a later turn",
                conversation_id,
                exc_info=True,
            )

    async def _fold(self, conversation_id: str) -> None:
        for _ in range(_MAX_ROUNDS):
            current = await self._summaries.find_summary(conversation_id)
            evicted = await self._evicted(conversation_id, current)
            if not evicted:
                return
            text = await self._summarize(current.text if current else "", evicted)
            await self._summaries.save_summary(
                conversation_id,
                text,
                evicted[-1].position,
                expected_version=current.version if current else 0,
            )
            # Won: more turns may be pending. Lost: another writer folded these turns.
            # Either way the next round re-reads the summary.

    async def _evicted(
        self, conversation_id: str, current: ConversationSummary | None
    ) -> list[StoredMessage]:
        """Return the oldest whole turns after the summary that are no longer in the window."""
        _, window = await self.memory._read(self._log, conversation_id)
        if not window:
            return []
        in_window = {s.message.id for s in window}
        after = current.covers if current else None
        found: list[StoredMessage] = []
        done = False
        # Positions are opaque (not comparable across backends): stop at the window's first
        # message, recognised by id.
        while not done:
            batch = await self._log.find_history(
                conversation_id, types=_CHAT_TYPES, after=after, limit=_PAGE
            )
            for stored in batch:
                if stored.message.id in in_window:
                    done = True
                    break
                found.append(stored)
            if len(batch) < _PAGE or len(split_turns([s.message for s in found])) > (
                self.max_turns_per_call
            ):
                break
            after = batch[-1].position
        turns = split_turns([s.message for s in found])
        if len(turns) > self.max_turns_per_call:
            # Only whole turns: the last one found may continue past this page.
            turns = turns[: self.max_turns_per_call]
        elif not done:
            return []  # the window's start was not found: the history changed meanwhile
        return [found[i] for turn in turns for i in turn]

    async def _summarize(self, previous: str, evicted: list[StoredMessage]) -> str:
        instructions = self.prompt.replace("{max_tokens}", str(self.max_summary_tokens))
        prompt = Prompt(
            [
                SystemMessage(instructions),
                UserMessage(render_evicted(previous, [s.message for s in evicted])),
            ],
            ChatOptions(max_tokens=self.max_summary_tokens),
        )
        response = await self.model.call(prompt)
        text = response.result.message.text if response.result else ""
        if not text.strip():
            raise ValueError("the summarizer returned an empty summary")
        return fit_to_budget(text, self.max_summary_tokens, self.token_estimator)


_PAGE = 200
_RENDERED = 1024

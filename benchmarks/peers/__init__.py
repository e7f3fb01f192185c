"""The same chat turn through chatmem and through the libraries users compare it with.

Each peer keeps a conversation the way its library does (LangChain's histories, LlamaIndex's
chat stores, the OpenAI Agents SDK's sessions, ADK's database session service, LangGraph's
Postgres checkpointer, and chatmem itself) on one of the test servers. A *turn* is what an app
does per request: read the history the library's memory reads, then store the user message and
the assistant's answer. Peers are measured side by side in one process, round-robin over the
history lengths, so machine noise hits them alike.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Peer", "available_peers", "measure_peers", "missing_peers"]


class Peer(Protocol):
    """One library's way of keeping a conversation, on one store.

    Sync libraries implement the async methods with plain calls: one process measures one
    peer at a time, so nothing else waits on the event loop.
    """

    name: str
    """The library, as shown in tables: ``"chatmem"``, ``"langchain-postgres"``..."""
    store: str
    """The store it runs on: ``"postgresql"``, ``"redis"``, ``"sqlite"``, ``"mongodb"``..."""
    window: int | None
    """Messages a turn reads at most (``None``: the whole history, as the library reads it)."""

    async def open(self, url: str) -> None:
        """Connect to the store at ``url`` (the test server's URL for ``store``)."""

    async def seed(self, conversation_id: str, messages: int) -> None:
        """Store ``messages`` messages of history in ``conversation_id`` (not measured)."""

    async def turn(self, conversation_id: str) -> int:
        """One measured turn: read the history as the library's memory does, store two messages.

        Returns how many messages the read returned, so a test can tell it read something.
        """

    async def stored(self, conversation_id: str) -> list[str]:
        """The text of every stored message, oldest first, through the library's own read."""

    async def close(self) -> None:
        """Release connections; leave nothing running."""


# After Peer: the measurement module names it for type checkers only.
from benchmarks.peers._measure import available_peers, measure_peers, missing_peers  # noqa: E402

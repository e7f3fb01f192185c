"""Which peers are installed, and the side-by-side measurement of their turns."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks.peers._common import conversation_id

if TYPE_CHECKING:
    from benchmarks.peers import Peer

__all__ = ["MODULES", "WARMUP", "available_peers", "measure_peers", "missing_peers"]

# Each peer module and the distribution that provides its library.
MODULES = {
    "chatmem": "chatmem",
    "chatmem_adapters": "chatmem[langchain,openai-agents]",
    "langchain": "langchain-postgres, langchain-community",
    "llama_index": "llama-index-storage-chat-store-postgres, -redis",
    "openai_agents": "openai-agents[redis,sqlalchemy]",
    "adk": "google-adk",
    "langgraph": "langgraph-checkpoint-postgres",
}
# Turns per (peer, size) made before the measured ones: connections, statement caches.
WARMUP = 2


def _load(module: str) -> Any:
    return importlib.import_module(f"benchmarks.peers.{module}")


def available_peers(stores: list[str]) -> list[Peer]:
    """Every peer whose library is installed, on each of ``stores`` it shares with chatmem.

    A peer whose library is not installed is left out (:func:`missing_peers` names them).
    """
    found: list[Peer] = []
    for module in MODULES:
        try:
            found += _load(module).peers(stores)
        except ImportError:
            continue
    return found


def missing_peers() -> dict[str, str]:
    """The peer modules whose library is not installed, with the import that failed."""
    missing = {}
    for module, distribution in MODULES.items():
        try:
            _load(module)
        except ImportError as exc:
            missing[module] = f"{distribution} not installed ({exc.name})"
    return missing


async def measure_peers(
    peers: Sequence[Peer],
    url_of: Callable[[str], str],
    sizes: Sequence[int],
    turns: int,
    *,
    warmup: int = WARMUP,
) -> list[dict[str, Any]]:
    """Measure ``turns`` turns of each peer on a conversation of each of ``sizes`` messages.

    Every peer is opened and seeded first (one conversation per size); then turns go round
    robin over the sizes and the peers, so load from elsewhere on the machine falls on all of
    them alike. ``warmup`` turns per conversation come first and are not kept. Every peer is
    closed (its data deleted) whatever happens.

    Args:
        peers: The peers, as :func:`available_peers` returns them.
        url_of: The URL of a store (``"postgresql"``...) for :meth:`Peer.open`.
        sizes: The history lengths, in messages.
        turns: Measured turns per peer and size.
        warmup: Unmeasured turns per peer and size before them.

    Returns:
        One dict per peer and size: ``{"peer", "store", "n", "samples_ms"}``.
    """
    conversations: dict[tuple[int, int], str] = {}
    samples: dict[tuple[int, int], list[float]] = {}
    opened: list[Peer] = []
    try:
        for index, peer in enumerate(peers):
            await peer.open(url_of(peer.store))
            opened.append(peer)
            for n in sizes:
                conversations[index, n] = conversation_id()
                samples[index, n] = []
                await peer.seed(conversations[index, n], n)
        for round_ in range(warmup + turns):
            for n in sizes:
                for index, peer in enumerate(peers):
                    started = time.perf_counter()
                    await peer.turn(conversations[index, n])
                    elapsed = (time.perf_counter() - started) * 1000
                    if round_ >= warmup:
                        samples[index, n].append(elapsed)
    finally:
        # Every peer is closed even if one cannot be (a server that stopped answering): the
        # others' data is still deleted; the first failure is raised after.
        failures = []
        for peer in opened:
            try:
                await peer.close()
            except Exception as exc:
                failures.append(exc)
        if failures:
            raise failures[0]
    return [
        {"peer": peer.name, "store": peer.store, "n": n, "samples_ms": samples[index, n]}
        for index, peer in enumerate(peers)
        for n in sizes
    ]

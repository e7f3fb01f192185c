"""``peers``: the same turn through chatmem and the libraries users compare it with.

Each peer (``benchmarks/peers/``: LangChain's histories, LlamaIndex's chat stores, the OpenAI
Agents SDK's sessions, ADK's database session service, LangGraph's Postgres checkpointer, and
chatmem) keeps a conversation the way its library does, on the backends named. Peers are
measured side by side in one process, round-robin over the history lengths; one record per
(peer, store, n). Peers whose library is not installed are left out.
"""

from __future__ import annotations

import asyncio

from benchmarks import peers as peer_adapters
from benchmarks.harness import Run, backend_url, scenario


@scenario("peers", backends=("postgresql", "redis", "sqlite"), sizes=(10, 1000, 10000), turns=50)
def peers(run: Run) -> None:
    """The same turn through every peer library and chatmem, side by side (ms per turn)."""
    assert run.backend
    store = run.backend
    found = peer_adapters.available_peers([store])  # type: ignore[attr-defined]
    url = run.url or backend_url(store)
    rows = asyncio.run(
        peer_adapters.measure_peers(  # type: ignore[attr-defined]
            found, lambda _store: url, run.sizes, run.turns
        )
    )
    for row in rows:
        run.record({"peer": row["peer"], "store": row["store"], "n": row["n"]}, row["samples_ms"])

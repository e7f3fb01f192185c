"""One order for all reads of a conversation: the cross-read part of the checker (no I/O).

A message that only one write can have stored has one position for its whole life, so every
read showing two such messages must show them in the same order. Each read contributes an
edge between neighbours (ignoring messages that may have been stored more than once, by a
retry after a delete); the reads agree exactly when these edges have no cycle.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from chatmem.testing._history import Operation

__all__ = ["ReadOrder"]


class ReadOrder:
    """Collects the order reads show and finds where they disagree.

    Args:
        storers: For each message id, the writes that may have stored it.
    """

    def __init__(self, storers: Mapping[str, Sequence[Operation]]) -> None:
        self._once = {i for i, writes in storers.items() if len(writes) == 1}
        self._edges: dict[str, dict[str, int]] = defaultdict(dict)

    def add(self, read: Operation) -> None:
        """Record the order of the once-stored messages a read shows."""
        previous: str | None = None
        for message_id in read.messages or ():
            if message_id not in self._once:
                continue
            if previous is not None and previous != message_id:
                self._edges[previous].setdefault(message_id, read.index)
            previous = message_id

    def cycle(self) -> tuple[list[str], list[int]] | None:
        """Return message ids the reads order in a cycle and the reads showing it, or ``None``."""
        indegree: dict[str, int] = defaultdict(int)
        for targets in self._edges.values():
            for target in targets:
                indegree[target] += 1
        ready = [node for node in self._edges if indegree[node] == 0]
        left = set(self._edges) | set(indegree)
        while ready:
            node = ready.pop()
            left.discard(node)
            for target in self._edges.get(node, {}):
                indegree[target] -= 1
                if indegree[target] == 0:
                    ready.append(target)
        if not left:
            return None
        return self._walk(left)

    def _walk(self, left: set[str]) -> tuple[list[str], list[int]]:
        # Every node left still has a predecessor left (its in-degree never reached zero), so
        # walking predecessors inside ``left`` must come back to a node already visited.
        predecessors: dict[str, list[str]] = defaultdict(list)
        for source in left:
            for target in self._edges.get(source, {}):
                if target in left:
                    predecessors[target].append(source)
        node = min(left)
        path: list[str] = []
        seen: dict[str, int] = {}
        while node not in seen:
            seen[node] = len(path)
            path.append(node)
            node = min(predecessors[node])
        loop = list(reversed(path[seen[node] :]))
        reads = [self._edges[a][b] for a, b in zip(loop, [*loop[1:], loop[0]], strict=True)]
        return loop, reads

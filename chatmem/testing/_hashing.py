"""A deterministic embedding whose similarity follows shared words (no I/O, no model).

Each lower-cased word is hashed (BLAKE2b) into one of ``dimensions`` buckets, each word adds
1 to its bucket, and the vector is scaled to unit length. Two texts score high exactly when
they share words, so retrieval can be asserted in tests. The test server's ``/embeddings``
route answers with the same vectors.
"""

from __future__ import annotations

import hashlib
import math
import re

__all__ = ["DEFAULT_HASHING_DIMENSIONS", "hashing_embedding"]

DEFAULT_HASHING_DIMENSIONS = 256
"""Vector length of the hashing embedding unless told otherwise."""

_WORD = re.compile(r"\w+")


def hashing_embedding(text: str, dimensions: int = DEFAULT_HASHING_DIMENSIONS) -> list[float]:
    """Return the unit-length hashing embedding of ``text``.

    A text without words maps to the first bucket, so no vector is all zeros.

    Args:
        text: The text.
        dimensions: Number of buckets (vector length).
    """
    counts = [0.0] * dimensions
    words = _WORD.findall(text.lower())
    for word in words:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        counts[int.from_bytes(digest, "big") % dimensions] += 1.0
    if not words:
        counts[0] = 1.0
    norm = math.sqrt(sum(c * c for c in counts))
    return [c / norm for c in counts]

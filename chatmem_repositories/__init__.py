"""Storage backends for chatmem, one self-contained subpackage per store.

Each backend imports its driver only inside its own subpackage, so installing one extra
(``pip install "chatmem[redis]"``) is enough to use it.
"""

__all__: list[str] = []

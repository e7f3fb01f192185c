"""Conversations encrypted at rest: envelope encryption over any repository.

Turn it on with a repository URL option (``?encryption=env`` reads keys from
``$CHATMEM_ENCRYPTION_KEYS``; ``?encryption=file:/path/to/keys`` from a file) or by wrapping a
repository in :class:`EncryptedLog` / :class:`AsyncEncryptedLog` with a :class:`KeyProvider`.
See the encryption page of the documentation for what stays in clear, rotation and
crypto-shredding.
"""

from __future__ import annotations

from chatmem._async.encrypted import AsyncEncryptedLog
from chatmem._async.encrypted_vector_store import AsyncEncryptedVectorStore
from chatmem._keys import (
    ENV_KEYS,
    EnvKeyProvider,
    FileKeyProvider,
    KeyProvider,
    KeyUnavailableError,
    StaticKeyProvider,
    WrappedKey,
    generate_key,
)
from chatmem._sealing import (
    DATA_KEY_EVENT,
    DEFAULT_SEARCH_SCAN_LIMIT,
    SEALED,
    EncryptedSearchLimitError,
)
from chatmem._sync.encrypted import EncryptedLog
from chatmem._sync.encrypted_vector_store import EncryptedVectorStore

__all__ = [
    "DATA_KEY_EVENT",
    "DEFAULT_SEARCH_SCAN_LIMIT",
    "ENV_KEYS",
    "SEALED",
    "AsyncEncryptedLog",
    "AsyncEncryptedVectorStore",
    "EncryptedLog",
    "EncryptedSearchLimitError",
    "EncryptedVectorStore",
    "EnvKeyProvider",
    "FileKeyProvider",
    "KeyProvider",
    "KeyUnavailableError",
    "StaticKeyProvider",
    "WrappedKey",
    "generate_key",
]

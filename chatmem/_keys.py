"""Key-encryption keys: where they come from and how they wrap conversations' data keys.

A conversation's content is encrypted with its own data key (see :mod:`chatmem._sealing`);
the data key is stored wrapped (encrypted) by a key-encryption key that a
:class:`KeyProvider` holds. The store never sees an unwrapped key.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from chatmem.exceptions import ConfigurationError

__all__ = [
    "ENV_KEYS",
    "KEY_BYTES",
    "EnvKeyProvider",
    "FileKeyProvider",
    "KeyProvider",
    "KeyUnavailableError",
    "StaticKeyProvider",
    "WrappedKey",
    "generate_key",
    "parse_key_list",
]

KEY_BYTES = 32
"""Every key is AES-256: 32 bytes."""
ENV_KEYS = "CHATMEM_ENCRYPTION_KEYS"
"""The environment variable :class:`EnvKeyProvider` reads by default."""
_NONCE_BYTES = 12
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")
_WRAP_CONTEXT = b"chatmem data key 1\0"


class KeyUnavailableError(ConfigurationError):
    """A key needed to read stored data is not available (retired, or never configured).

    Attributes:
        key_id: The id of the missing key.
    """

    def __init__(self, message: str, *, key_id: str) -> None:
        super().__init__(message)
        self.key_id = key_id


@dataclass(frozen=True, slots=True)
class WrappedKey:
    """A data key encrypted by a key-encryption key, as it is stored."""

    key_id: str
    """Id of the key-encryption key that wrapped it."""
    wrapped: bytes
    """The wrapped data key (nonce and AES-GCM ciphertext)."""


@runtime_checkable
class KeyProvider(Protocol):
    """Holds key-encryption keys and wraps and unwraps data keys with them.

    Implement it to keep keys in a cloud KMS: ``wrap`` and ``unwrap`` are called once per
    conversation per process (unwrapped data keys are cached), never per message.
    """

    @property
    def current_key_id(self) -> str:
        """The id of the key that wraps new data keys."""
        ...

    def wrap(self, data_key: bytes) -> WrappedKey:
        """Wrap a data key with the current key-encryption key.

        Args:
            data_key: 32 random bytes.
        """
        ...

    def unwrap(self, wrapped: WrappedKey) -> bytes:
        """Return the data key, or raise :class:`KeyUnavailableError` without its key.

        Args:
            wrapped: A key that :meth:`wrap` returned, by this or an earlier provider.
        """
        ...


def generate_key() -> str:
    """Return a new random key-encryption key, base64-encoded (for an environment or a file).

    Example:
        ```python
        from chatmem.encryption import StaticKeyProvider, generate_key

        provider = StaticKeyProvider.from_text(f"k1:{generate_key()}")
        assert provider.current_key_id == "k1"
        ```
    """
    return base64.b64encode(AESGCM.generate_key(bit_length=8 * KEY_BYTES)).decode("ascii")


class StaticKeyProvider:
    """Key-encryption keys held in this process: the first (or ``current``) wraps new keys.

    Keys no longer current stay readable: list them until every data key they wrapped has
    been rotated (``chatmem keys rotate``), then drop them.

    Example:
        ```python
        import os

        from chatmem.encryption import StaticKeyProvider

        provider = StaticKeyProvider({"2026-12": os.urandom(32)})
        data_key = os.urandom(32)
        assert provider.unwrap(provider.wrap(data_key)) == data_key
        ```

    Args:
        keys: Key id (letters, digits, ``_`` and ``-``, at most 40) to its 32 bytes.
        current: The id of the key that wraps new data keys; the first of ``keys`` by default.

    Raises:
        ConfigurationError: No key, a key that is not 32 bytes, a bad id or an unknown
            ``current``.
    """

    def __init__(self, keys: Mapping[str, bytes], *, current: str | None = None) -> None:
        if not keys:
            raise ConfigurationError("a key provider needs at least one key-encryption key")
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
                raise ConfigurationError(
                    f"key id {key_id!r} must be 1 to 40 letters, digits, '_' or '-'"
                )
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise ConfigurationError(f"key {key_id!r} must be {KEY_BYTES} bytes (AES-256)")
        chosen = next(iter(keys)) if current is None else current
        if chosen not in keys:
            raise ConfigurationError(f"current key {chosen!r} is not one of the keys given")
        self._keys = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self._current = chosen

    @classmethod
    def from_text(cls, text: str, *, source: str = "key list") -> StaticKeyProvider:
        """Read keys written as ``id:base64`` entries, separated by commas or lines.

        The first entry is the current key. Blank lines and lines starting with ``#`` are
        skipped.

        Args:
            text: The entries.
            source: Where the text came from, named in errors (never the keys).
        """
        return cls(parse_key_list(text, source=source))

    @property
    def current_key_id(self) -> str:
        """The id of the key that wraps new data keys."""
        return self._current

    @property
    def key_ids(self) -> list[str]:
        """Every key id this provider can unwrap with, the current one first."""
        return [self._current, *(k for k in self._keys if k != self._current)]

    def wrap(self, data_key: bytes) -> WrappedKey:
        """Wrap a data key with the current key (AES-256-GCM, the key id as associated data).

        Args:
            data_key: The data key.
        """
        nonce = os.urandom(_NONCE_BYTES)
        aad = _WRAP_CONTEXT + self._current.encode("ascii")
        sealed = self._keys[self._current].encrypt(nonce, data_key, aad)
        return WrappedKey(self._current, nonce + sealed)

    def unwrap(self, wrapped: WrappedKey) -> bytes:
        """Return the data key that ``wrapped`` holds.

        Args:
            wrapped: A wrapped key.

        Raises:
            KeyUnavailableError: This provider has no key of that id.
            ConfigurationError: The wrapped key does not open with the key of its id (it was
                wrapped by another key of the same id, or altered).
        """
        kek = self._keys.get(wrapped.key_id)
        if kek is None:
            raise KeyUnavailableError(
                f"key-encryption key {wrapped.key_id!r} is not configured (retired?); "
                f"configured: {', '.join(self.key_ids)}",
                key_id=wrapped.key_id,
            )
        nonce, sealed = wrapped.wrapped[:_NONCE_BYTES], wrapped.wrapped[_NONCE_BYTES:]
        try:
            return kek.decrypt(nonce, sealed, _WRAP_CONTEXT + wrapped.key_id.encode("ascii"))
        except InvalidTag:
            raise ConfigurationError(
                f"a data key wrapped by {wrapped.key_id!r} does not open with the configured "
                f"key of that id: the key differs from the one that wrapped it, or the stored "
                "wrapped key was altered"
            ) from None


class EnvKeyProvider(StaticKeyProvider):
    """Keys from an environment variable: ``CHATMEM_ENCRYPTION_KEYS="k2:base64,k1:base64"``.

    The first entry is the current key; the others stay readable. Read once, when made.

    Example:
        ```python
        import os

        from chatmem.encryption import EnvKeyProvider, generate_key

        os.environ["CHATMEM_ENCRYPTION_KEYS"] = f"k1:{generate_key()}"
        assert EnvKeyProvider().current_key_id == "k1"
        ```

    Args:
        variable: The environment variable.

    Raises:
        ConfigurationError: The variable is unset, empty or malformed.
    """

    def __init__(self, variable: str = ENV_KEYS) -> None:
        text = os.environ.get(variable, "")
        if not text.strip():
            raise ConfigurationError(
                f"encryption is on but ${variable} is not set: set it to 'id:base64key' "
                "entries (chatmem keys generate prints one)"
            )
        super().__init__(parse_key_list(text, source=f"${variable}"))


class FileKeyProvider(StaticKeyProvider):
    """Keys from a file: one ``id:base64`` entry per line, the first the current key.

    Args:
        path: The file (keep it readable by the application's user only).

    Raises:
        ConfigurationError: The file cannot be read or is malformed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"cannot read the key file {str(path)!r}: {exc}") from exc
        super().__init__(parse_key_list(text, source=f"key file {str(path)!r}"))


def parse_key_list(text: str, *, source: str) -> dict[str, bytes]:
    """Parse ``id:base64`` entries (commas or lines; ``#`` comments), in order.

    Args:
        text: The entries.
        source: Where they came from, named in errors (the keys never are).

    Raises:
        ConfigurationError: An entry without ``:``, an id given twice, or a key that is not
            base64 of 32 bytes.
    """
    keys: dict[str, bytes] = {}
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        for entry in filter(None, (piece.strip() for piece in line.split(","))):
            key_id, colon, encoded = entry.partition(":")
            key_id = key_id.strip()
            if not colon:
                raise ConfigurationError(f"{source}: an entry is not 'id:base64key'")
            if key_id in keys:
                raise ConfigurationError(f"{source}: key id {key_id!r} is given twice")
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except (binascii.Error, ValueError):
                raise ConfigurationError(f"{source}: key {key_id!r} is not base64") from None
            keys[key_id] = key
    if not keys:
        raise ConfigurationError(f"{source}: no key-encryption key found")
    return keys

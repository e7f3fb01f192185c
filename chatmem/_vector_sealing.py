"""Vector documents sealed with a conversation's data key (AES-256-GCM). No I/O.

A sealed document keeps in clear what the vector store needs: its id, its embedding (a
similarity search compares them) and the metadata entries filters use (its *clear*
metadata). Its text and every other metadata entry are one ciphertext, stored as the
document's text: ``chatmem-sealed:1.<data key id>.<base64 of nonce and ciphertext>``.

The associated data binds the ciphertext to the document id, to its key scope (the
conversation whose data key sealed it) and to its clear metadata, so a stored document
copied over another, moved to another conversation or given other clear metadata (another
owner) does not open.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Collection
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from chatmem._sealing import DataKey
from chatmem._vector_types import MetadataValue, VectorDocument
from chatmem.exceptions import MessageDecodeError

__all__ = ["open_document", "seal_document", "sealed_document_key_id"]

_PREFIX = "chatmem-sealed:"
_VERSION = "1"
_NONCE_BYTES = 12


def seal_document(
    document: VectorDocument,
    embedding: list[float],
    scope: str,
    key: DataKey,
    clear_fields: Collection[str],
) -> VectorDocument:
    """Return the stored form of ``document``: its text and sealed metadata one ciphertext.

    Args:
        document: The document as the caller gave it.
        embedding: Its embedding, computed from the clear text.
        scope: The conversation whose data key seals it.
        key: That conversation's sealing key.
        clear_fields: The metadata keys stored in clear.
    """
    clear = {k: v for k, v in document.metadata.items() if k in clear_fields}
    sealed = {k: v for k, v in document.metadata.items() if k not in clear_fields}
    plain = json.dumps({"text": document.text, "metadata": sealed}, ensure_ascii=False)
    nonce = os.urandom(_NONCE_BYTES)
    associated = _associated_data(document.id, scope, clear)
    ciphertext = key.cipher.encrypt(nonce, plain.encode("utf-8"), associated)
    encoded = base64.b64encode(nonce + ciphertext).decode("ascii")
    return VectorDocument(
        id=document.id,
        text=f"{_PREFIX}{_VERSION}.{key.data_key_id}.{encoded}",
        metadata=clear,
        embedding=embedding,
    )


def sealed_document_key_id(document: VectorDocument) -> str | None:
    """The data key id a stored document was sealed with; ``None`` if it is in clear."""
    if not document.text.startswith(_PREFIX):
        return None
    version, _, rest = document.text[len(_PREFIX) :].partition(".")
    data_key_id, dot, _ = rest.partition(".")
    return data_key_id if version == _VERSION and dot else ""


def open_document(document: VectorDocument, scope: str, cipher: AESGCM) -> VectorDocument:
    """Return the document a sealed stored document holds, with its score.

    Args:
        document: The document as the store returned it.
        scope: The conversation its clear metadata names.
        cipher: The data key named by its text.

    Raises:
        MessageDecodeError: The ciphertext does not open: altered, copied over another
            document, or its clear metadata changed.
    """
    encoded = document.text.rpartition(".")[2]
    associated = _associated_data(document.id, scope, document.metadata)
    try:
        raw = base64.b64decode(encoded, validate=True)
        plain = cipher.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], associated)
        content: Any = json.loads(plain)
        text, sealed = content["text"], content["metadata"]
        if not isinstance(text, str) or not isinstance(sealed, dict):
            raise ValueError("not a sealed document")
    except (binascii.Error, ValueError, KeyError, TypeError, InvalidTag):
        raise MessageDecodeError(
            f"sealed vector document {document.id!r} of conversation {scope!r} does not "
            "open: it was altered, copied over another document or its clear metadata changed",
            conversation_id=scope,
        ) from None
    metadata: dict[str, MetadataValue] = {**document.metadata, **sealed}
    return VectorDocument(id=document.id, text=text, metadata=metadata, score=document.score)


def _associated_data(document_id: str, scope: str, clear: dict[str, MetadataValue]) -> bytes:
    canonical = json.dumps(clear, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    parts = ("chatmem vector document", _VERSION, scope, document_id, canonical)
    return "\0".join(parts).encode("utf-8")

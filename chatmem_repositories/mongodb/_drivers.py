"""The driver names both twins import; pymongo's sync and async module paths differ.

``scripts/unasync.py`` turns ``AsyncCollection`` into ``Collection`` and so on, but not
``pymongo.asynchronous`` into ``pymongo.synchronous``, so the generated code imports both
names from here.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from pymongo import AsyncMongoClient, MongoClient
from pymongo.asynchronous.collection import AsyncCollection as _AsyncCollection
from pymongo.synchronous.collection import Collection as _Collection

__all__ = ["AsyncCollection", "AsyncMongoClient", "Collection", "Document", "MongoClient"]

Document: TypeAlias = dict[str, Any]
"""A BSON document as pymongo hands it over."""
AsyncCollection: TypeAlias = _AsyncCollection[Document]
"""An async collection of plain documents."""
Collection: TypeAlias = _Collection[Document]
"""A sync collection of plain documents."""

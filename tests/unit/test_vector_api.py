"""Conventions for the vector-store modules: sorted API, twins, light imports, contracts."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

from chatmem.embedding import AsyncEmbeddingModel, EmbeddingModel
from chatmem.exceptions import ConfigurationError
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, HashingEmbeddingModel
from chatmem.vector_store import (
    AsyncInMemoryVectorStore,
    AsyncVectorStore,
    InMemoryVectorStore,
    VectorDocument,
    VectorFilter,
    VectorStore,
    as_filter,
)

MODULES = ["chatmem.vector_store", "chatmem.embedding", "chatmem.testing.vectors"]


def _key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert list(module.__all__) == sorted(module.__all__, key=_key)
    for attribute in module.__all__:
        obj = getattr(module, attribute)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, attribute


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"),
    [
        (AsyncInMemoryVectorStore, InMemoryVectorStore),
        (AsyncHashingEmbeddingModel, HashingEmbeddingModel),
    ],
)
def test_twins_have_the_same_methods(async_cls: type, sync_cls: type) -> None:
    def methods(cls: type) -> set[str]:
        names = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
        return {"close" if n == "aclose" else n for n in names}

    assert methods(async_cls) == methods(sync_cls)


def test_stores_and_models_satisfy_the_contracts() -> None:
    assert isinstance(HashingEmbeddingModel(), EmbeddingModel)
    assert isinstance(AsyncHashingEmbeddingModel(), AsyncEmbeddingModel)
    assert isinstance(InMemoryVectorStore(HashingEmbeddingModel()), VectorStore)
    assert isinstance(AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel()), AsyncVectorStore)


def test_a_model_of_the_other_flavor_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="sync"):
        InMemoryVectorStore(AsyncHashingEmbeddingModel())  # type: ignore[arg-type]


def test_importing_the_vector_modules_imports_no_numpy_or_driver() -> None:
    code = (
        "import sys, chatmem, chatmem.vector_store, chatmem.embedding, chatmem_advisors;"
        "banned = ('numpy', 'neo4j', 'cassandra', 'openai');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_filters_are_structured_values() -> None:
    where = as_filter({"owner": "alice", "conversation_id": "c1"})
    assert where == VectorFilter(conversation_id="c1", owner="alice")
    assert where.conditions == (("conversation_id", "c1"), ("owner", "alice"))
    assert where.matches({"conversation_id": "c1", "owner": "alice", "x": 1})
    assert not where.matches({"conversation_id": "c1"})
    assert not as_filter(None)
    with pytest.raises(ConfigurationError, match="never strings"):
        as_filter("conversation_id = 'c1'")  # type: ignore[arg-type]


def test_documents_validate_metadata_keys_and_ids() -> None:
    with pytest.raises(ValueError, match="identifier"):
        VectorDocument(text="x", metadata={"bad key": "v"})
    with pytest.raises(ValueError, match="id"):
        VectorDocument(text="x", id="")
    assert VectorDocument(text="x").id != VectorDocument(text="x").id

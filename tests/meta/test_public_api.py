"""Conventions as tests: complete and sorted ``__all__``, sync/async twins, no driver imports.

Nothing here is a hand-kept list that could fall behind the code. The public modules are every
module of the four packages whose dotted name has no private part. The sync/async pairs are
derived from what each module exports, with the generator's own renaming rules
(``scripts/unasync.py``): an exported async name must have its sync twin exported beside it,
and every export of a generated ``_sync`` module must have its async source exported too, so a
missing twin fails instead of being skipped.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ParamSpec, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chatmem", "chatmem_repositories", "chatmem_advisors", "chatmem_cli")
# Names that say "async" and so must have a sync twin, wherever they are defined.
ASYNC_NAME = re.compile(r"^(Async[A-Z]|async_)")


def _public_modules() -> list[str]:
    def unimportable(name: str) -> None:
        raise ImportError(f"{name} cannot be imported, so its public modules cannot be listed")

    found = []
    for root in PACKAGES:
        package = importlib.import_module(root)
        found.append(root)
        for info in pkgutil.walk_packages(package.__path__, f"{root}.", onerror=unimportable):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.append(info.name)
    return sorted(found)


PUBLIC_MODULES = _public_modules()


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_unasync", ROOT / "scripts" / "unasync.py")
    assert spec is not None
    assert spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    return generator


GENERATOR = _load_generator()


def sync_name(name: str) -> str:
    """The name the generator gives ``name`` in the sync twin (unchanged if not renamed)."""
    result: str = GENERATOR.transform(name)
    return result


def _package_part(obj: Any) -> str | None:
    """``"_async"`` or ``"_sync"`` if ``obj`` is defined in (generated) twin code."""
    parts = str(getattr(obj, "__module__", "") or "").split(".")
    return next((p for p in parts if p in ("_async", "_sync")), None)


def _swap(module_name: str, old: str, new: str) -> str:
    return ".".join(new if part == old else part for part in module_name.split("."))


def test_the_public_modules_are_found() -> None:
    # Guards the derivation: a walk that found nothing would make every check below pass.
    assert {
        "chatmem",
        "chatmem.testing",
        "chatmem.testing.vectors",
        "chatmem_repositories.sql",
        "chatmem_repositories.cassandra",
        "chatmem_advisors",
    } <= set(PUBLIC_MODULES)


# -- __all__ ------------------------------------------------------------------------------------


def _isort_key(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 enforces: CONSTANTS, then Classes, then functions.
    if name.isupper():
        return (0, name)
    return (1 if name[:1].isupper() else 2, name)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's top-level statements, looking inside ``if`` and ``try`` blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body)
            for handler in node.handlers:
                yield from _top_level(handler.body)
        else:
            yield node


def _bound_names(node: ast.stmt, is_package: bool) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.ImportFrom):
        own = node.level > 0 or (node.module or "").split(".")[0] in PACKAGES
        return [
            alias.asname or alias.name
            for alias in node.names
            if (is_package and own) or alias.asname == alias.name
        ]
    return []


def _defined_or_reexported(module: ModuleType) -> dict[str, int]:
    """Public names the module's source binds at top level, with their line numbers.

    Defined: classes, functions and assignments (also under ``if``/``try``, and under
    ``if TYPE_CHECKING``). Re-exported: in a package's ``__init__``, whatever it imports from
    chatmem's own packages; in a plain module, ``import x as x`` (PEP 484's re-export form),
    since its other imports are for its own use.
    """
    path = Path(module.__file__ or "")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        name: node.lineno
        for node in _top_level(tree.body)
        for name in _bound_names(node, is_package=path.name == "__init__.py")
        if not name.startswith("_")
    }


def _is_exempt(module: ModuleType, name: str) -> bool:
    # Type variables are typing machinery, not API; submodules are reached by import.
    obj = getattr(module, name, None)
    return isinstance(obj, TypeVar | ParamSpec | ModuleType)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_complete_sorted_and_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} is public and has no __all__"
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{name}.__all__ names something twice"
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.__all__ names missing {attribute}"
        obj = getattr(module, attribute)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attribute} has no docstring"
    missing = [
        f"{attribute} (line {line})"
        for attribute, line in sorted(_defined_or_reexported(module).items())
        if attribute not in exported and not _is_exempt(module, attribute)
    ]
    assert not missing, (
        f"{name} defines or re-exports public names that are not in __all__: "
        f"{', '.join(missing)}; export them or give them a leading underscore"
    )


def _signatures(module: ModuleType) -> Iterator[tuple[str, inspect.Signature]]:
    """The signatures of a module's exported functions and their classes' own methods."""
    for attribute in module.__all__:
        obj = getattr(module, attribute)
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if member.startswith("_") and member not in ("__init__", "__new__", "__call__"):
                    continue
                function = getattr(value, "__func__", value)  # classmethod, staticmethod
                if inspect.isfunction(function):
                    yield f"{attribute}.{member}", inspect.signature(function)
        elif inspect.isfunction(obj):
            yield attribute, inspect.signature(obj)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_no_public_signature_has_a_private_parameter(name: str) -> None:
    # A parameter with a leading underscore is internal plumbing shown to every caller (and
    # to help() and the API reference); internal ways in belong in private methods.
    module = importlib.import_module(name)
    private = [
        f"{where}({parameter})"
        for where, signature in _signatures(module)
        for parameter in signature.parameters
        if parameter.startswith("_")
    ]
    assert not private, f"{name}: private parameters in public signatures: {', '.join(private)}"


# -- sync/async twins ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_async_export_has_its_sync_twin_exported(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    problems = []
    for attribute in sorted(exported):
        obj = getattr(module, attribute)
        if _package_part(obj) != "_async" and not ASYNC_NAME.match(attribute):
            continue
        twin = sync_name(attribute)
        if twin == attribute:
            continue  # shared by both twins (a dataclass defined once, in the async source)
        if twin not in exported:
            problems.append(f"{attribute} is exported but its sync twin {twin} is not")
        elif _package_part(obj) == "_async":
            expected = _swap(obj.__module__, "_async", "_sync")
            actual = getattr(getattr(module, twin), "__module__", None)
            if actual != expected:
                problems.append(f"{twin} comes from {actual}, not from the twin {expected}")
    assert not problems, f"{name}: " + "; ".join(problems)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_generated_export_has_its_async_source_exported(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    problems = []
    for attribute in sorted(exported):
        obj = getattr(module, attribute)
        if _package_part(obj) != "_sync":
            continue
        source = importlib.import_module(_swap(obj.__module__, "_sync", "_async"))
        origins = sorted(n for n in vars(source) if sync_name(n) == attribute and n != attribute)
        if not origins and attribute in vars(source):
            continue  # not renamed by the generator: the same name on both sides
        if not any(origin in exported for origin in origins):
            wanted = " or ".join(origins) or f"the async source of {attribute}"
            problems.append(f"{attribute} is exported but {wanted} is not")
    assert not problems, f"{name}: " + "; ".join(problems)


def _twins() -> list[Any]:
    pairs: dict[tuple[int, int], Any] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            twin = sync_name(attribute)
            if twin != attribute and twin in module.__all__:
                async_obj, sync_obj = getattr(module, attribute), getattr(module, twin)
                pair = (async_obj, sync_obj)
                label = f"{name}.{attribute}"
                pairs.setdefault((id(async_obj), id(sync_obj)), pytest.param(pair, id=label))
    return list(pairs.values())


@pytest.mark.parametrize("pair", _twins())
def test_every_async_twin_has_the_same_members_as_its_sync_twin(pair: tuple[Any, Any]) -> None:
    async_obj, sync_obj = pair
    if str(getattr(async_obj, "__module__", "")).split(".")[0] not in PACKAGES:
        return  # a re-export of another library's pair (asyncio's and threading's locks)
    if not inspect.isclass(async_obj):
        assert not inspect.isclass(sync_obj)
        if inspect.iscoroutinefunction(async_obj):
            assert not inspect.iscoroutinefunction(sync_obj), f"{sync_obj} is async"
        return

    def methods(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}

    assert {sync_name(n) for n in methods(async_obj)} == methods(sync_obj)
    for name in methods(async_obj):
        async_method = getattr(async_obj, name)
        sync_method = getattr(sync_obj, sync_name(name))
        if inspect.iscoroutinefunction(async_method):
            assert not inspect.iscoroutinefunction(sync_method), f"{name} is async in the twin"


def test_importing_chatmem_imports_no_driver_or_sdk() -> None:
    code = (
        "import sys, chatmem, chatmem.memory, chatmem.repository, chatmem_repositories;"
        "banned = ('sqlalchemy', 'redis', 'pymongo', 'cassandra', 'neo4j', 'openai', 'tiktoken');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

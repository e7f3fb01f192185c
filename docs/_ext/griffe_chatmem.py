"""A griffe extension for the API reference: chatmem's docstrings as mkdocs renders them.

The docstrings use Sphinx roles (``:class:`~chatmem.ChatMemory```), doctest examples (``>>>``
lines) and private base classes (``_Frozen``). Without this extension the roles show
literally, the doctest lines run together into one paragraph and the private bases appear in
class signatures. Loaded by mkdocstrings (``extensions`` in mkdocs.yml); the docstrings in the
code are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|attr|data|const|mod|exc|obj|type):`(?P<text>[^`]+)`")
ROOTS = ("chatmem", "chatmem_repositories", "chatmem_advisors", "chatmem_cli")
PROMPT = re.compile(r"^(?P<indent>[ \t]*)>>> ")


class ChatmemDocstrings(griffe.Extension):
    """Rewrite roles into cross-references, fence doctests, drop private bases."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite every object of a loaded package.

        Args:
            pkg: The package griffe loaded.
            **kwargs: Unused.
        """
        seen: set[int] = set()
        self._walk(pkg, seen)

    def _walk(self, obj: griffe.Object, seen: set[int]) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if obj.docstring is not None:
            text = _fence_doctests(obj.docstring.value)
            obj.docstring.value = ROLE.sub(lambda m: _reference(m["text"], obj), text)
        if isinstance(obj, griffe.Class):
            obj.bases = [base for base in obj.bases if not _private(str(base))]
        for member in obj.members.values():
            if not member.is_alias and isinstance(member, griffe.Object):
                self._walk(member, seen)


def _private(name: str) -> bool:
    return name.rsplit(".", 1)[-1].startswith("_")


def _resolve(path: str, obj: griffe.Object) -> str | None:
    """Return the canonical path of ``path`` (a re-export resolves to its definition)."""
    try:
        found = obj.modules_collection.get_member(path)
    except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError):
        return None
    try:
        return str(found.final_target.path) if found.is_alias else str(found.path)
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return str(found.path)


def _reference(text: str, obj: griffe.Object) -> str:
    short = text.startswith("~")
    target = text.lstrip("~!").removesuffix("()")
    shown = target.rsplit(".", 1)[-1] if short else target
    if text.endswith("()"):
        shown += "()"
    candidates = [target] if target.startswith(ROOTS) else []
    # A bare name is relative to the module the docstring is in, or to its class.
    if isinstance(obj, griffe.Class):
        candidates.append(f"{obj.path}.{target}")
    if obj.parent is not None and isinstance(obj.parent, griffe.Class):
        candidates.append(f"{obj.parent.path}.{target}")
    candidates.append(f"{obj.module.path}.{target}")
    identifier = next(
        (resolved for c in candidates if (resolved := _resolve(c, obj))), candidates[0]
    )
    # "optional": a target that is not on any page renders as code instead of failing.
    return f'<autoref identifier="{identifier}" optional><code>{shown}</code></autoref>'


def _fence_doctests(text: str) -> str:
    """Put each run of ``>>>`` lines (with their output) in a ```pycon fence."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = PROMPT.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)

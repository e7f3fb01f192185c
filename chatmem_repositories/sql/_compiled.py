"""Statements compiled once into the driver's SQL text, for the statements of every turn.

A turn's read and PostgreSQL's one-statement append are built once per plan with bound
parameters. SQLAlchemy's execution of such a statement still costs more than the database
work (a cache key of the whole construct, event dispatch, an execution context, result
processing); the runner compiles each one once per dialect into its SQL text and hands it to
the driver's cursor, applying the column types' bind conversions (UTC timestamps, the search
text's NUL) itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Executable
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["DriverList", "DriverSql", "compile_for_driver", "compile_with_values", "statement_list"]


@dataclass(frozen=True, slots=True)
class DriverSql:
    """A statement's SQL text in the driver's parameter style, and how to bind its values.

    Attributes:
        text: The SQL text.
        defaults: Values the statement itself binds (literals such as ``0``).
        processors: ``(name, convert)`` for each parameter whose column type converts it.
        positional: The parameter names in order, for a positional style (``?``); ``None``
            for a named one (``%(name)s``).
    """

    text: str
    defaults: Mapping[str, Any]
    processors: tuple[tuple[str, Callable[[Any], Any]], ...]
    positional: tuple[str, ...] | None

    def bind(self, params: Mapping[str, Any]) -> Any:
        """Return the driver's parameters for ``params`` (a dict, or a tuple if positional).

        Raises:
            KeyError: If a parameter of the statement is missing.
        """
        values = {**self.defaults, **params}
        for name, convert in self.processors:
            values[name] = convert(values[name])
        if self.positional is not None:
            return tuple(values[name] for name in self.positional)
        return values


@dataclass(frozen=True, slots=True)
class DriverList:
    """Statements' SQL joined into one statement list (MySQL), and how to bind their values.

    Attributes:
        text: The statements, separated by ``;``.
        parts: Each statement's SQL, in order.
    """

    text: str
    parts: tuple[DriverSql, ...]

    def bind(self, params: Mapping[str, Any]) -> Any:
        """Return the driver's parameters of every statement for ``params``, in order.

        Raises:
            KeyError: If a parameter of a statement is missing.
        """
        bound = [part.bind(params) for part in self.parts]
        if all(isinstance(values, tuple) for values in bound):
            return tuple(value for values in bound for value in values)
        merged: dict[str, Any] = {}
        for values in bound:
            merged.update(values)  # one params mapping: a name has one value everywhere
        return merged


def statement_list(parts: Sequence[DriverSql], *, ending: str) -> DriverList:
    """Join statements' SQL into one statement list that ends with ``ending`` (``COMMIT``)."""
    return DriverList(";\n".join([*(part.text for part in parts), ending]), tuple(parts))


def compile_for_driver(statement: Executable, dialect: Dialect) -> DriverSql | None:
    """Compile ``statement`` for ``dialect``'s driver, or ``None`` if it cannot be run so.

    Statements whose text depends on their values (expanding ``IN``, post-compile limits)
    stay with SQLAlchemy.
    """
    compiled = _compiled(statement, dialect)
    if compiled is None:
        return None
    defaults = {
        name: value
        for name, value in compiled.construct_params(_check=False).items()
        if value is not None
    }
    return _driver_sql(compiled, defaults)


def compile_with_values(statement: Executable, dialect: Dialect) -> DriverSql | None:
    """Compile a statement built with its values (no ``bindparam``) for the driver, or ``None``.

    For the rare statements of a transaction that runs on the driver's connection: compiled
    on every use (SQLAlchemy's cache is not consulted), every value bound as the statement
    holds it, ``None`` included.
    """
    compiled = _compiled(statement, dialect)
    if compiled is None:
        return None
    return _driver_sql(compiled, compiled.construct_params(_check=False))


def _compiled(statement: Executable, dialect: Dialect) -> SQLCompiler | None:
    if not isinstance(statement, ClauseElement):
        return None
    compiled = statement.compile(dialect=dialect)
    if not isinstance(compiled, SQLCompiler) or "POSTCOMPILE" in compiled.string:
        return None
    if any(param.expanding for param in compiled.binds.values()):
        return None
    return compiled


def _driver_sql(compiled: SQLCompiler, defaults: Mapping[str, Any]) -> DriverSql:
    processors = getattr(compiled, "_bind_processors", {})
    positional = compiled.positiontup if compiled.positional else None
    return DriverSql(
        text=compiled.string,
        defaults=defaults,
        processors=tuple(processors.items()),
        positional=None if positional is None else tuple(positional),
    )

"""What a plan asks the repository to run: steps of a program, answered one at a time.

A plan never touches a connection. Each operation is a generator (a *program*) that yields
steps and receives their answers, as h11 does for HTTP; the repository runs the steps on
its engine, sync or async, and sends the answers back. So one plan serves both repositories
and holds every dialect decision, and the repository holds only the I/O: connections,
transactions, retries and error mapping.

At the top level a program yields :class:`Query`, :class:`Send` or :class:`Transaction`.
A transaction's body yields :class:`Execute` and :class:`InsertOrConflict`; a direct
transaction's body may end with a :class:`Script`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Executable

__all__ = [
    "Body",
    "Execute",
    "InsertOrConflict",
    "Program",
    "Query",
    "Reply",
    "Script",
    "Send",
    "Transaction",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Query:
    """One read statement in autocommit; answered with its rows (a list).

    Attributes:
        statement: The statement.
        params: Its bound parameters, if built with ``bindparam``.
    """

    statement: Executable
    params: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Send:
    """One write statement in autocommit; answered with its rows (a list).

    A connection lost after it was sent leaves the write's outcome unknown.

    Attributes:
        statement: The statement.
        params: Its bound parameters.
    """

    statement: Executable
    params: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Execute:
    """One statement in the current transaction; answered with a :class:`Reply`.

    Attributes:
        statement: The statement.
        params: Its bound parameters, if built with ``bindparam`` (a statement built once);
            a list of them runs it as an executemany.
        lastrowid: Answer with the driver's ``lastrowid`` too (MySQL/MariaDB).
    """

    statement: Executable
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
    lastrowid: bool = False


@dataclass(frozen=True, slots=True)
class InsertOrConflict:
    """An ``INSERT`` in a savepoint; answered ``True``, or ``False`` if a unique key refused it.

    Attributes:
        statement: The insert.
    """

    statement: Executable


@dataclass(frozen=True, slots=True)
class Script:
    """Statements run in order as the last step of a direct transaction's body.

    Answered with a :class:`Reply` per statement (``lastrowid`` included). Where the
    connection sends statement lists (MySQL/MariaDB on an engine the repository made), the
    statements and the transaction's COMMIT go in one round trip; elsewhere they run one by
    one and the transaction commits as usual. Either way they run on one connection, in
    order, so they may pass values on in the session (MySQL user variables). A list stops at
    a failing statement, before the COMMIT: the transaction is then rolled back as usual.

    Attributes:
        statements: The statements, each built once with bound parameters.
        params: The parameters of all of them (a name two statements use has one value).
    """

    statements: tuple[Executable, ...]
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to :class:`Execute`.

    Attributes:
        rows: The rows it returned (none for a statement without ``RETURNING``).
        rowcount: The rows it changed, as the driver reports it.
        lastrowid: The driver's ``lastrowid`` (MySQL: the value of ``LAST_INSERT_ID()``
            the statement set), or ``None``.
    """

    rows: list[Any]
    rowcount: int
    lastrowid: int | None = None

    def one(self) -> Any:
        """Return the only row.

        Raises:
            LookupError: If there is not exactly one row.
        """
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def first(self) -> Any | None:
        """Return the first row, or ``None``."""
        return self.rows[0] if self.rows else None


Body = Generator[Execute | InsertOrConflict | Script, Any, T]
"""A transaction's body: yields statements, returns the transaction's result."""


@dataclass(frozen=True, slots=True)
class Transaction(Generic[T]):
    """A transaction; answered with what its body returned once committed.

    Attributes:
        body: Makes the body's program; called again for every attempt (a deadlock or a
            dropped pooled connection runs the whole transaction again).
        direct: The body yields only :class:`Execute` and reads only integers from the rows
            it gets back, so a runner may run it on the driver's connection, its own BEGIN
            and COMMIT included: the rows are then the driver's, not converted by column
            type.
    """

    body: Callable[[], Body[T]]
    direct: bool = False


Program = Generator[Query | Send | Transaction[Any], Any, T]
"""An operation: yields top-level steps, returns the operation's result."""

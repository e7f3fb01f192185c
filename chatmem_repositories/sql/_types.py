"""Column types that behave alike on SQLite, PostgreSQL, MySQL/MariaDB, SQL Server and Oracle."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, String, Text
from sqlalchemy.dialects import mssql, mysql, oracle
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["NUL_STAND_IN", "Identifier", "LongText", "SearchText", "UtcDateTime"]

_MYSQL = ("mysql", "mariadb")

# PostgreSQL rejects NUL in text; SQLite's LIKE stops reading at it.
_NUL_UNSAFE = ("postgresql", "sqlite")
NUL_STAND_IN = "\u00df"
"""What NUL becomes in the search text on PostgreSQL and SQLite (``ß``).

``str.casefold()`` turns ``ß`` into ``ss`` and, case folding being idempotent (a Unicode
stability guarantee), never outputs it: no casefolded text contains it, so it cannot be
confused with the NUL it stands for.
"""


class _TextBoundVarbinary(mysql.VARBINARY):
    """VARBINARY that is bound as text: the utf8mb4 connection turns it into UTF-8 bytes."""

    def bind_processor(self, dialect: Dialect) -> None:
        """Bind unchanged (the stock processor insists on bytes)."""
        return


class Identifier(TypeDecorator[str]):
    """A conversation or message id, compared byte for byte on every database.

    MySQL and MariaDB collations ignore case, accents or trailing spaces, so two different
    ids could name one conversation; there the id is stored as UTF-8 ``VARBINARY``. It is
    bound as text (the connection's utf8mb4 gives the bytes; comparing with a binary column
    is binary), since aiomysql cannot bind bytes with current PyMySQL. SQL Server gets a
    binary collation for the same reason.
    """

    impl = String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self._chars = length

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        """Pick the byte-exact type for ``dialect``."""
        if dialect.name in _MYSQL:
            return dialect.type_descriptor(_TextBoundVarbinary(self._chars * 4))
        if dialect.name == "mssql":
            return dialect.type_descriptor(
                mssql.NVARCHAR(self._chars, collation="Latin1_General_100_BIN2")
            )
        return dialect.type_descriptor(String(self._chars))

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        """Decode UTF-8 bytes back to text."""
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value).decode("utf-8")
        return value  # type: ignore[no-any-return]


class UtcDateTime(TypeDecorator[datetime]):
    """A UTC timestamp with microseconds, stored without a zone on every database.

    Values are converted to UTC on the way in and come back timezone-aware (UTC).
    """

    impl = DateTime
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        """Pick a type that keeps microseconds on ``dialect``."""
        if dialect.name in _MYSQL:
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        if dialect.name == "mssql":
            return dialect.type_descriptor(mssql.DATETIME2(precision=6))  # type: ignore[no-untyped-call]
        if dialect.name == "oracle":
            return dialect.type_descriptor(oracle.TIMESTAMP())
        return dialect.type_descriptor(DateTime())

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        """Store naive UTC."""
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """Return aware UTC."""
        if value is None:
            return None
        if isinstance(value, str):  # SQLite without type detection
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]


def LongText(*, binary_collation: bool = False) -> TypeEngine[str]:  # noqa: N802
    """Text of any length: MySQL ``TEXT`` stops at 64 KB, so it becomes ``LONGTEXT`` there.

    Args:
        binary_collation: Compare byte for byte on MySQL/MariaDB (for ``LIKE`` on casefolded
            text, so an accent-insensitive default collation cannot add false matches).
    """
    variant = (
        mysql.LONGTEXT(charset="utf8mb4", collation="utf8mb4_bin")
        if binary_collation
        else mysql.LONGTEXT(charset="utf8mb4")
    )
    # SQL Server's TEXT is deprecated; NVARCHAR(max) holds the same and supports LIKE.
    return Text().with_variant(variant, *_MYSQL).with_variant(mssql.NVARCHAR(), "mssql")


class SearchText(TypeDecorator[str]):
    """Casefolded text that ``LIKE`` searches, of any length, NUL included.

    On PostgreSQL and SQLite a NUL is stored as :data:`NUL_STAND_IN`, a character no
    casefolded text contains. Every value bound against the column goes through the same
    substitution, the ``LIKE`` pattern included, so a search matches exactly where the
    original text does. Other databases store NUL as it is.
    """

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        """Use :func:`LongText` with a byte-for-byte collation on MySQL/MariaDB."""
        return LongText(binary_collation=True)

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        """Replace NUL on the databases that cannot store or search it."""
        if value is not None and dialect.name in _NUL_UNSAFE:
            return value.replace("\x00", NUL_STAND_IN)
        return value

    def coerce_compared_value(self, op: Any, value: Any) -> TypeEngine[Any]:
        """Bind compared values, such as a ``LIKE`` pattern, as this type (so NUL maps too)."""
        return self

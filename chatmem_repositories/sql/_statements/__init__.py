"""The SQL statements every dialect shares, as SQLAlchemy Core constructs (no I/O).

:mod:`.reads` builds the reads, :mod:`.writes` the portable writes; the statements only
some dialects have (upserts, ``RETURNING``, PostgreSQL's one-statement append) are built by
their plans in :mod:`chatmem_repositories.sql._plans`. Every value is a bound parameter;
table names come only from the validated prefix.
"""

from chatmem_repositories.sql._statements.reads import Reads, expired, live
from chatmem_repositories.sql._statements.writes import Writes

__all__ = ["Reads", "Writes", "expired", "live"]

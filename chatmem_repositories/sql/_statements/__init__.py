"""The SQL statements every dialect shares, as SQLAlchemy Core constructs (no I/O).

:mod:`.reads` builds the reads, :mod:`.writes` the portable writes, :mod:`.reservation` the
parts of the reservation upsert every dialect builds alike; the statements only some
dialects have (upserts, ``RETURNING``, PostgreSQL's one-statement append) are built by their
plans in :mod:`chatmem_repositories.sql._async.plans`. Every value is a bound parameter;
table names come only from the validated prefix.
"""

from chatmem_repositories.sql._statements.reads import Reads, expired, live
from chatmem_repositories.sql._statements.writes import Writes

__all__ = ["Reads", "Writes", "expired", "live"]

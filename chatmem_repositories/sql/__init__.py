"""The SQL repository: SQLite, PostgreSQL, MySQL/MariaDB (and SQL Server, Oracle) via SQLAlchemy.

Example:
    ```python
    from chatmem_repositories.sql import DRIVER_PARAMETERS, SqlChatMemoryRepository

    repository = SqlChatMemoryRepository.from_url("sqlite:///chat.db")
    print(SqlChatMemoryRepository.schema_ddl("postgresql"))
    print(sorted(DRIVER_PARAMETERS["mysql"]))  # URL parameters passed to the driver
    repository.close()
    ```
"""

from chatmem_repositories.sql._async.repository import AsyncSqlChatMemoryRepository
from chatmem_repositories.sql._options import DRIVER_PARAMETERS, SqlOptions
from chatmem_repositories.sql._schema import schema_ddl
from chatmem_repositories.sql._sync.repository import SqlChatMemoryRepository

__all__ = [
    "DRIVER_PARAMETERS",
    "AsyncSqlChatMemoryRepository",
    "SqlChatMemoryRepository",
    "SqlOptions",
    "schema_ddl",
]

"""The SQL repository: SQLite, PostgreSQL, MySQL/MariaDB (and SQL Server, Oracle) via SQLAlchemy.

Example:
    ```python
    from chatmem_repositories.sql import SqlChatMemoryRepository

    repository = SqlChatMemoryRepository.from_url("sqlite:///chat.db")
    print(SqlChatMemoryRepository.schema_ddl("postgresql"))
    ```
"""

from chatmem_repositories.sql._async.repository import AsyncSqlChatMemoryRepository
from chatmem_repositories.sql._options import SqlOptions
from chatmem_repositories.sql._schema import schema_ddl
from chatmem_repositories.sql._sync.repository import SqlChatMemoryRepository

__all__ = [
    "AsyncSqlChatMemoryRepository",
    "SqlChatMemoryRepository",
    "SqlOptions",
    "schema_ddl",
]

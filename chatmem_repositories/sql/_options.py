"""Options of the SQL repository, and the URL parameters each dialect passes to its driver.

The rule for a URL's query (no I/O), every backend's: every parameter is one of chatmem's
options (:class:`SqlOptions`) or a documented driver parameter of the URL's dialect
(:data:`DRIVER_PARAMETERS`), passed to the driver unchanged; anything else is a
:class:`~chatmem.exceptions.ConfigurationError` naming it, with a suggestion. Other driver
arguments go through ``from_url(..., driver_options={...})``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chatmem.backend import (
    DRIVER_OPTIONS,
    Duration,
    ParsedUrl,
    parse_url_options,
    split_url,
)
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.sql._schema import check_table_prefix

__all__ = ["DRIVER_PARAMETERS", "SqlOptions", "parse_url"]


class SqlOptions(BaseModel):
    """Options accepted by ``from_url`` (as keywords or URL query parameters)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttl: Duration | None = None
    """Expire a conversation this long after its last write; ``None`` keeps it forever."""
    table_prefix: str = "chatmem_"
    """Prefix of the two table names (a letter, then letters, digits or underscores)."""
    initialize_schema: Literal["embedded", "always", "never"] = "embedded"
    """Create missing tables: only for embedded databases (SQLite), always, or never."""
    connect_timeout: Duration = timedelta(seconds=10)
    """How long to wait for a connection (or for a free one from the pool)."""
    read_timeout: Duration = timedelta(seconds=30)
    """How long to wait for the answer to one statement or commit. Past it, the connection
    is closed and ``RepositoryTimeoutError`` raised (``RepositoryWriteTimeoutError`` for a
    write that may have been applied). Applies to PostgreSQL and MySQL/MariaDB; SQLite
    waits for its file lock instead (30 s)."""
    pool_size: int | None = Field(default=None, ge=1)
    """Connections kept open by a repository that owns its engine. ``None``: 10 for the
    async repository, 5 for the sync one. Callers beyond the open connections (and the
    overflow) wait, up to ``connect_timeout``, for one to come back (see
    docs/backends/sql.md, "Concurrency")."""
    max_overflow: int | None = Field(default=None, ge=0)
    """Extra connections opened under load beyond ``pool_size``, each closed again when it
    is returned while the pool is full. ``None``: 0 for the async repository (opening one
    per checkout, a new server process on PostgreSQL with its prepared statements lost, made
    its throughput collapse as tasks grew), 20 for the sync one (threads take the GIL in
    turn and rarely overflow; fewer connections made their waits long)."""

    pool_pre_ping: bool = False
    """Test every pooled connection before use. Off by default: it costs a round trip per
    call, and the repository instead retries once on a connection the server dropped."""

    @field_validator("table_prefix")
    @classmethod
    def _valid_prefix(cls, value: str) -> str:
        return check_table_prefix(value)


_LIBPQ = """host hostaddr port dbname user password passfile require_auth channel_binding
client_encoding options application_name fallback_application_name keepalives
keepalives_idle keepalives_interval keepalives_count tcp_user_timeout gssencmode sslmode
sslnegotiation sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl
sslcrldir sslsni requirepeer ssl_min_protocol_version ssl_max_protocol_version krbsrvname
gsslib gssdelegation service target_session_attrs load_balance_hosts"""
# What SQLAlchemy's pymysql and aiomysql dialects take from a URL and both drivers accept.
_MYSQL = """charset use_unicode client_flag local_infile compress unix_socket init_command
sql_mode program_name ssl_ca ssl_cert ssl_key ssl_capath ssl_cipher ssl_check_hostname"""
# sqlite3's connect() arguments SQLAlchemy reads, and SQLite's URI parameters, which are
# read only with uri=true (SQLAlchemy ignores them otherwise: here that is an error).
_SQLITE = "uri timeout isolation_level detect_types check_same_thread cached_statements"
_SQLITE_URI = frozenset(["mode", "cache", "immutable", "nolock", "vfs", "psow", "modeof"])
_MSSQL = """driver odbc_connect Encrypt TrustServerCertificate Trusted_Connection
authentication ApplicationIntent MultiSubnetFailover LongAsMax"""
_ORACLE = "service_name mode events"

DRIVER_PARAMETERS: Mapping[str, frozenset[str]] = {
    # libpq's connection keywords (psycopg passes them on; asyncpg takes its own "ssl").
    "postgresql": frozenset(_LIBPQ.split()) | {"ssl", "prepared_statement_cache_size"},
    "mysql": frozenset(_MYSQL.split()),
    "mariadb": frozenset(_MYSQL.split()),
    "sqlite": frozenset(_SQLITE.split()) | _SQLITE_URI,
    "mssql": frozenset(_MSSQL.split()),
    "oracle": frozenset(_ORACLE.split()),
}
"""URL query parameters passed to the driver unchanged, by dialect name (``"postgresql"``,
``"mysql"``, ``"mariadb"``, ``"sqlite"``, ``"mssql"``, ``"oracle"``)."""


def _dialect_of(url: str) -> str:
    scheme = split_url(url).scheme.lower().partition("+")[0]
    return "postgresql" if scheme == "postgres" else scheme


def parse_url(
    url: str, keyword_options: Mapping[str, Any], driver_options: Mapping[str, Any] | None
) -> ParsedUrl[SqlOptions]:
    """Apply the URL option rule with the driver parameters of the URL's dialect.

    Args:
        url: The repository URL.
        keyword_options: ``from_url``'s keyword options; declared driver parameters given
            as keywords go to the driver too.
        driver_options: Arbitrary driver arguments (they win over everything else).

    Returns:
        The URL without chatmem's options, the options, and the driver's keyword arguments.

    Raises:
        ConfigurationError: For an unknown option or URL parameter (naming it, with a
            suggestion), an SQLite URI parameter without ``uri=true``, or a bad value.
    """
    dialect = _dialect_of(url)
    keywords = dict(keyword_options)
    if driver_options is not None:
        keywords[DRIVER_OPTIONS] = driver_options
    parsed = parse_url_options(
        SqlOptions,
        url,
        keywords,
        backend="sql",
        driver_parameters=DRIVER_PARAMETERS.get(dialect, frozenset()),
    )
    given = parsed.url_driver_parameters
    if dialect == "sqlite" and "uri" not in given:
        for name in sorted(_SQLITE_URI & set(given)):
            raise ConfigurationError(
                f"{name!r} is an SQLite URI parameter, read only with uri=true in the URL"
            )
    return parsed

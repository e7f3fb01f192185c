"""A conversation's running summary: static columns of its partition, written under Paxos.

The summary (``summary``, ``summary_covers``, ``summary_version``) lives in the partition of
the conversation it summarizes, so every write that removes the partition removes it too:
``delete_by_conversation_id``, ``save_all`` (its batch clears the partition, so the summary
goes with the messages it summarized), and the deletion of an expired life (a summary write
also writes ``touched``, whose write time bounds that deletion). The
version-checked write is one conditional update, ``IF summary_version = ?`` (``= null`` for
the first version) ``AND next_position > 0`` (``AND alive = true`` with a TTL): Paxos decides
between concurrent writers at the serial consistency level, and a conversation that does not
exist (or has expired) gets no summary, which would outlive it.
"""

from __future__ import annotations

from chatmem.backend import Position
from chatmem.exceptions import ConfigurationError, RepositoryTimeoutError
from chatmem.repository import ConversationSummary
from chatmem_repositories.cassandra._codec import parse_position
from chatmem_repositories.cassandra._drivers import AsyncSessionAdapter, Row
from chatmem_repositories.cassandra._errors import is_paxos_contention
from chatmem_repositories.cassandra._options import BACKEND

__all__ = ["AsyncSummaries"]


class AsyncSummaries:
    """Reads and version-checked writes of the summary columns.

    Args:
        ttl: The conversation TTL in whole seconds; 0 for none.
    """

    def __init__(self, ttl: int) -> None:
        self._ttl = ttl

    @staticmethod
    def _check(db: AsyncSessionAdapter) -> None:
        if db.summaries_missing:
            raise ConfigurationError(
                f"the {BACKEND} table {db.cql.messages} has no summary columns (it was made"
                " before them and initialize_schema is 'never'); add them with: "
                + db.cql.add_summary_columns(),
            )

    async def _read(self, db: AsyncSessionAdapter, conversation_id: str, *, serial: bool) -> Row:
        statement = db.bind("summary", (conversation_id,))
        if serial:
            # A serial read finishes any Paxos round in flight first: it tells for sure
            # whether a write whose answer was lost applied.
            statement.consistency_level = db.serial_level
        rows = await db.execute(statement, write=serial)
        return rows[0] if rows else {}

    def _live(self, row: Row) -> bool:
        if self._ttl:
            return row.get("alive") is not None
        return row.get("next_position") is not None

    async def find(
        self, db: AsyncSessionAdapter, conversation_id: str
    ) -> ConversationSummary | None:
        """Return the live conversation's summary, or ``None``."""
        self._check(db)
        row = await self._read(db, conversation_id, serial=False)
        if not self._live(row) or row.get("summary_version") is None:
            return None
        return ConversationSummary(
            row["summary"] or "", int(row["summary_covers"]), int(row["summary_version"])
        )

    async def save(
        self,
        db: AsyncSessionAdapter,
        conversation_id: str,
        text: str,
        covers: Position,
        expected_version: int,
    ) -> bool:
        """Write version ``expected_version + 1`` if the stored one is ``expected_version``.

        Raises:
            ConfigurationError: For a position this repository did not make, a text that is
                not a string or a version that is not an integer.
        """
        self._check(db)
        position = parse_position(covers)
        if not isinstance(text, str):
            raise ConfigurationError(f"a summary is a string, got {type(text).__name__}")
        if isinstance(expected_version, bool) or not isinstance(expected_version, int):
            raise ConfigurationError(
                f"expected_version must be an integer, got {expected_version!r}"
            )
        if expected_version < 0:
            return False  # no stored version is negative
        live = "_live" if self._ttl else ""
        version = expected_version + 1
        if expected_version == 0:
            statement = db.bind("summary_first" + live, (text, position, 1, conversation_id))
        else:
            statement = db.bind(
                "summary_next" + live,
                (text, position, version, conversation_id, expected_version),
            )
        try:
            rows = await db.execute(statement, write=True)
        except RepositoryTimeoutError as exc:
            if not is_paxos_contention(exc):
                raise
            # The round timed out among other writers: whether it applied is unknown. A
            # serial read settles it; the text, position and version tell whose write won.
            row = await self._read(db, conversation_id, serial=True)
            return (
                self._live(row)
                and row.get("summary_version") == version
                and row.get("summary") == text
                and row.get("summary_covers") == position
            )
        return bool(rows and rows[0].get("[applied]"))

"""The parts of the reservation upsert that every plan with an upsert builds alike.

An append reserves ``n`` positions by inserting the conversation row or, when it exists,
updating it; only the upsert's syntax differs by dialect (``ON CONFLICT`` or ``ON DUPLICATE
KEY``), so the parameters, the new row and the system position are built here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Integer, Table, and_, bindparam, case, null
from sqlalchemy.sql.elements import BindParameter

from chatmem.conversation_ids import owner_of
from chatmem_repositories.sql._codec import FIRST_POSITION, Batch

__all__ = ["ReservationParts", "reservation_params", "reservation_parts"]


@dataclass(frozen=True)
class ReservationParts:
    """What a reservation upsert is made of, whatever the dialect's upsert syntax."""

    n: BindParameter[Any]
    """Positions to reserve (parameter ``n``)."""
    now: BindParameter[Any]
    """The append's time (parameter ``at``)."""
    expires_at: BindParameter[Any]
    """The conversation's new expiry (parameter ``until``)."""
    is_expired: ColumnElement[bool]
    """Whether the stored row is expired at ``now``."""
    row: dict[str, Any]
    """The values of a new conversation's row."""
    system: ColumnElement[Any]
    """The stored row's new ``system_position``, read from the row as it was."""


def reservation_parts(conversations: Table, with_system: bool) -> ReservationParts:
    """Build the parameters, new row and system position of a reservation upsert.

    Args:
        conversations: The conversations table.
        with_system: Whether the batch holds a system message (parameter ``sys``, its
            offset in the batch).
    """
    # No parameter is named after a column: SQLAlchemy would add it to the statement.
    c = conversations.c
    n = bindparam("n", type_=Integer())
    now = bindparam("at", type_=c.updated_at.type)
    expires_at = bindparam("until", type_=c.expires_at.type)
    offset = bindparam("sys", type_=Integer())
    is_expired = and_(c.expires_at.is_not(None), c.expires_at <= now)
    row = {
        "conversation_id": bindparam("cid", type_=c.conversation_id.type),
        "owner": bindparam("owned_by", type_=c.owner.type),
        "next_position": n + FIRST_POSITION,
        "first_position": 0,
        "system_position": offset + FIRST_POSITION if with_system else null(),
        "created_at": now,
        "updated_at": now,
        "expires_at": expires_at,
    }
    system = (
        c.next_position + offset
        if with_system
        else case((is_expired, null()), else_=c.system_position)
    )
    return ReservationParts(n, now, expires_at, is_expired, row, system)


def reservation_params(
    conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
) -> dict[str, Any]:
    """The parameters of a reservation upsert built by :func:`reservation_parts`."""
    return {
        "cid": conversation_id,
        "owned_by": owner_of(conversation_id),
        "n": len(batch),
        "at": now,
        "until": expires_at,
        "sys": batch.system_offset,
    }

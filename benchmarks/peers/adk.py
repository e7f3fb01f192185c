"""Google ADK's ``DatabaseSessionService`` on PostgreSQL and SQLite.

A turn is what ADK's Runner does per user message: ``get_session`` (the session with all its
events, the Runner's default), then ``append_event`` of the user's event and of the model's
answer (each a transaction that checks the session is not stale).
"""

from __future__ import annotations

from typing import Any

from google.adk.events import Event
from google.adk.sessions import DatabaseSessionService, Session
from google.genai import types

from benchmarks.peers._common import answer, question, sqlalchemy_url, sqlite_path
from benchmarks.peers._pg_schema import create_schema, drop_schema, new_schema

__all__ = ["AdkPeer"]

APP = "peers"
USER = "bench-user"


def _event(author: str, text: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, content=types.Content(role=role, parts=[types.Part(text=text)]))


def _pair(i: int) -> list[Event]:
    return [_event("user", question(i)), _event("assistant", answer(i))]


class AdkPeer:
    """ADK's ``DatabaseSessionService`` for ``store`` (postgresql or sqlite)."""

    name = "google-adk DatabaseSessionService"
    window: int | None = None

    def __init__(self, store: str) -> None:
        self.store = store
        self._service: DatabaseSessionService | None = None
        self._url = ""
        self._schema = new_schema("adk")
        self._turns = 0

    async def open(self, url: str) -> None:
        self._url = url
        if self.store == "postgresql":
            # ADK names its tables (sessions, events...): a schema of its own keeps them apart.
            await create_schema(url, self._schema)
            engine_url = sqlalchemy_url(url, "psycopg")
            engine_url += ("&" if "?" in engine_url else "?") + (
                f"options=-csearch_path%3D{self._schema}"
            )
        else:
            engine_url = f"sqlite+aiosqlite:///{sqlite_path(url, 'adk')}"
        self._service = DatabaseSessionService(db_url=engine_url)

    async def _session(self, conversation_id: str) -> Session:
        assert self._service is not None
        session = await self._service.get_session(
            app_name=APP, user_id=USER, session_id=conversation_id
        )
        assert session is not None, conversation_id
        return session

    async def seed(self, conversation_id: str, messages: int) -> None:
        assert self._service is not None
        session = await self._service.create_session(
            app_name=APP, user_id=USER, session_id=conversation_id
        )
        events = [e for i in range((messages + 1) // 2) for e in _pair(i)][:messages]
        # ADK has no batch append, and one append_event per message takes minutes at 10,000
        # messages: the history is inserted in one transaction of ADK's own event rows (the
        # rows append_event writes), then the session is read back as a turn reads it.
        schema = self._service._get_schema_classes()
        async with self._service._rollback_on_exception_session() as sql_session:
            sql_session.add_all(schema.StorageEvent.from_event(session, e) for e in events)
            await sql_session.commit()

    async def turn(self, conversation_id: str) -> int:
        assert self._service is not None
        self._turns += 1
        session = await self._session(conversation_id)
        read = len(session.events)
        for event in _pair(self._turns):
            await self._service.append_event(session, event)
        return read

    async def stored(self, conversation_id: str) -> list[str]:
        session = await self._session(conversation_id)
        texts: list[str] = []
        for event in session.events:
            parts: Any = event.content.parts if event.content else []
            texts.append("".join(part.text or "" for part in parts or []))
        return texts

    async def close(self) -> None:
        if self._service is None:
            return
        try:
            await self._service.close()
        finally:
            self._service = None
            if self.store == "postgresql":
                await drop_schema(self._url, self._schema)


def peers(stores: list[str]) -> list[AdkPeer]:
    """ADK's database session service on each of ``stores`` it supports."""
    return [AdkPeer(store) for store in stores if store in ("postgresql", "sqlite")]

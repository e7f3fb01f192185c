"""Key rotation beside writers, on an encrypted SQLite file and PostgreSQL.

Every process moves to a key list with the new key first and the old one after it; writers
keep appending to many conversations (and start new ones) while the rotation runs; then the
old key is dropped, and every message and summary of every conversation still opens. Each
run has a table prefix (or file) of its own: a rotation visits every conversation it lists.
"""

from __future__ import annotations

import os
import random
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from chatmem import AssistantMessage, UserMessage
from chatmem.encryption import EncryptedLog, StaticKeyProvider
from chatmem.privacy import RotationReport, rotate_keys
from chatmem_repositories import create_repository
from tests.support.servers import server_url

CONVERSATIONS = 60
WRITERS = 4
TABLES = ("summaries", "messages", "conversations")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store of this test's own: an SQLite file, or PostgreSQL tables under a new prefix."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'rotation.db'}"
        return
    server = server_url("postgresql")
    prefix = f"rot{uuid.uuid4().hex[:8]}_"
    yield f"{server}?table_prefix={prefix}&initialize_schema=always"
    engine = create_engine(server)
    try:
        with engine.begin() as connection:
            for name in TABLES:
                connection.execute(text(f"DROP TABLE IF EXISTS {prefix}{name}"))
    finally:
        engine.dispose()


class Writers:
    """Threads appending to random conversations (and starting new ones) until stopped."""

    def __init__(self, url: str, keys: StaticKeyProvider, written: dict[str, list[str]]) -> None:
        self.url, self.keys, self.written = url, keys, written
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.started = threading.Barrier(WRITERS + 1)
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(WRITERS)]

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        self.started.wait(timeout=60)  # every writer has written once
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)
        assert not self.errors, self.errors

    def _run(self, number: int) -> None:
        chooser = random.Random(number)
        try:
            with EncryptedLog(create_repository(self.url), self.keys) as log:
                turn = 0
                while turn == 0 or not self.stop.is_set():
                    with self.lock:
                        existing = list(self.written)
                    if turn % 10 == 9:
                        conversation_id = f"new-{number}-{turn}"
                    else:
                        conversation_id = chooser.choice(existing)
                    message = UserMessage(f"writer {number} turn {turn}")
                    log.append(conversation_id, [message])
                    with self.lock:
                        self.written.setdefault(conversation_id, []).append(message.id)
                    if turn == 0:
                        self.started.wait(timeout=60)
                    turn += 1
        except BaseException as exc:  # reported by __exit__
            self.errors.append(exc)
            self.started.abort()


def test_rotation_beside_writers_then_the_old_key_goes(url: str) -> None:
    k1, k2 = os.urandom(32), os.urandom(32)
    written: dict[str, list[str]] = {}
    with EncryptedLog(create_repository(url), StaticKeyProvider({"k1": k1})) as log:
        for n in range(CONVERSATIONS):
            conversation_id = f"chat-{n}"
            messages = [UserMessage(f"question {n}"), AssistantMessage(f"answer {n}")]
            stored = log.append(conversation_id, messages)
            written[conversation_id] = [m.id for m in messages]
            if n % 3 == 0:
                covers = stored[-1].position
                assert log.save_summary(conversation_id, f"summary {n}", covers, expected_version=0)

    both = StaticKeyProvider({"k2": k2, "k1": k1})
    with Writers(url, both, written), EncryptedLog(create_repository(url), both) as log:
        report = rotate_keys(log, concurrency=4)
    # Every conversation listed was visited; a writer may have wrapped some keys itself.
    assert report.conversations >= CONVERSATIONS
    assert report.rewrapped <= report.conversations

    with EncryptedLog(create_repository(url), StaticKeyProvider({"k2": k2})) as log:
        for conversation_id, message_ids in written.items():
            # Sorted: two writers' appends to one conversation are recorded in either order.
            stored = [m.id for m in log.find_by_conversation_id(conversation_id)]
            assert sorted(stored) == sorted(message_ids)
        for n in range(0, CONVERSATIONS, 3):
            summary = log.find_summary(f"chat-{n}")
            assert summary is not None
            assert summary.text == f"summary {n}"
        listed = log.list_conversations(limit=1000).conversation_ids
        assert sorted(listed) == sorted(written)
        # Nothing is left for a rotation to do, and the retired key is not needed for it.
        assert rotate_keys(log) == RotationReport(conversations=len(written), rewrapped=0)

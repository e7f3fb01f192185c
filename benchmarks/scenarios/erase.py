"""``erase``: erasing an owner's conversations and rotating their keys.

In a store of the run's own (a new table or key prefix), encrypted with a key ``k1``, one
owner's ``--sizes`` conversations of 3 messages each are written (4 threads), then timed:
``rotate k1 to k2`` (every process on ``k2,k1``), the same rotation again (nothing left to
wrap), the owner's erase, and the erase again (nothing left). Concurrency is the command
line's default.
"""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from benchmarks.harness import Run, backend_of, repository_options, scenario
from benchmarks.scenarios.storage import PREFIX_OPTION, SIZES
from chatmem import AssistantMessage, ChatMemoryLog, UserMessage, scoped_conversation_id
from chatmem.encryption import EncryptedLog, StaticKeyProvider
from chatmem.privacy import erase_owner, rotate_keys
from chatmem_cli._transfer_commands import MIGRATE_CONCURRENCY
from chatmem_repositories import create_repository

MESSAGES = 3


def _fill(log: ChatMemoryLog, owner: str, conversations: int) -> None:
    def write(n: int) -> None:
        batch = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"message {i} of chat {n}")
            for i in range(MESSAGES)
        ]
        log.append(scoped_conversation_id(owner, f"chat-{n}"), batch)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, range(conversations)))


@scenario("erase", backends=("sqlite", "postgresql", "redis"), sizes=(2000,))
def erase(run: Run) -> None:
    """Seconds to rotate an owner's keys and to erase the owner, and their re-runs."""
    assert run.url
    backend = backend_of(run.url)
    keys = {name: os.urandom(32) for name in ("k1", "k2")}
    prefix = f"er{uuid.uuid4().hex[:6]}_"
    options = {**repository_options(run.url), PREFIX_OPTION[backend]: prefix}
    owner = f"bench-{uuid.uuid4().hex[:8]}"
    conversations = run.sizes[-1]
    params = {"conversations": conversations, "messages": MESSAGES}

    def step(name: str, seconds: float, done: int) -> None:
        rate = round(done / seconds) if done else None
        run.record({**params, "step": name}, results={"seconds": round(seconds, 3), "rate": rate})

    repository = create_repository(run.url, **options)
    try:
        with EncryptedLog(repository, StaticKeyProvider({"k1": keys["k1"]})) as log:
            _fill(log, owner, conversations)
        rotating = create_repository(run.url, **options)
        with EncryptedLog(rotating, StaticKeyProvider({"k2": keys["k2"], "k1": keys["k1"]})) as log:
            # StaticKeyProvider wraps with its first key: k2, and still reads k1.
            for name in ("rotate k1 to k2", "rotate again (nothing to do)"):
                began = time.perf_counter()
                report = rotate_keys(log, concurrency=MIGRATE_CONCURRENCY)
                step(name, time.perf_counter() - began, report.conversations)
            for name in ("erase owner", "erase again (nothing left)"):
                began = time.perf_counter()
                report = erase_owner(log, owner, concurrency=MIGRATE_CONCURRENCY)
                step(name, time.perf_counter() - began, report.conversations)
    finally:
        repository.close()
        if backend in SIZES and backend != "sqlite":
            SIZES[backend](run.url, prefix, True)

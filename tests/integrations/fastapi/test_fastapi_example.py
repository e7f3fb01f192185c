"""The FastAPI example, run with TestClient against two backends picked by environment only."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from chatmem_repositories import create_repository
from tests.support.servers import server_url

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from chatmem.testing import OpenAITestServer
from tests.support.environment import clear_settings

ROOT = Path(__file__).resolve().parents[3]
ALICE = {"Authorization": "Bearer token-alice"}
BOB = {"Authorization": "Bearer token-bob"}


@pytest.fixture(params=["sqlite", "redis"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'app.db'}"
        return
    prefix = f"fastapi{uuid4().hex[:8]}"
    url = f"{server_url('redis')}?key_prefix={prefix}"
    yield url
    with create_repository(url) as repository:
        for conversation_id in repository.find_conversation_ids():
            repository.delete_by_conversation_id(conversation_id)


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch, backend_url: str) -> Iterator[OpenAITestServer]:
    clear_settings(monkeypatch)
    monkeypatch.chdir(ROOT)
    with OpenAITestServer() as server:
        # The only configuration: environment variables, as in production.
        monkeypatch.setenv("CHATMEM_REPOSITORY_URL", backend_url)
        monkeypatch.setenv("CHATMEM_MAX_MESSAGES", "10")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("CHATMEM_CHAT_MODEL", "test-model")
        monkeypatch.syspath_prepend(str(ROOT))
        monkeypatch.delitem(sys.modules, "docs.examples.fastapi_app", raising=False)
        yield server


def test_per_user_memory_with_backend_from_environment(
    example: OpenAITestServer, backend_url: str
) -> None:
    module = importlib.import_module("docs.examples.fastapi_app")
    example.reply_text("Hello, Mr Bond.", "Hello, Bob.", "Your name is James Bond.")
    with TestClient(module.app) as client:
        first = client.post(
            "/chats/mission/messages", json={"text": "My name is James Bond"}, headers=ALICE
        )
        assert first.status_code == 200, first.text
        assert first.json() == {"chat": "mission", "answer": "Hello, Mr Bond."}
        # Bob uses the same chat name: a different conversation, derived on the server.
        assert (
            client.post(
                "/chats/mission/messages", json={"text": "I am Bob"}, headers=BOB
            ).status_code
            == 200
        )
        third = client.post(
            "/chats/mission/messages", json={"text": "What is my name?"}, headers=ALICE
        )
        assert third.json()["answer"] == "Your name is James Bond."

        sent = [m["content"] for m in example.chat_requests[2]["messages"]]
        assert sent == [
            "You are a helpful assistant.",
            "My name is James Bond",
            "Hello, Mr Bond.",
            "What is my name?",
        ]
        assert client.get("/chats", headers=ALICE).json() == ["mission"]
        assert [
            line["text"] for line in client.get("/chats/mission/messages", headers=BOB).json()
        ] == [
            "I am Bob",
            "Hello, Bob.",
        ]
        assert client.get("/chats", headers={"Authorization": "Bearer nope"}).status_code == 401

    # The data is in the backend the environment named, under server-derived ids.
    with create_repository(backend_url) as repository:
        assert repository.list_conversations(owner="alice").conversation_ids == ["alice:mission"]
        assert repository.list_conversations(owner="bob").conversation_ids == ["bob:mission"]
        assert len(repository.find_history("alice:mission")) == 4

    with TestClient(module.app) as client:
        assert client.delete("/chats/mission", headers=ALICE).status_code == 204
        assert client.get("/chats", headers=ALICE).json() == []
        assert client.get("/chats", headers=BOB).json() == ["mission"]

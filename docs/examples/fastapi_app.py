"""A FastAPI chat service with per-user memory; the backend is chosen by environment only.

Run it:

    CHATMEM_REPOSITORY_URL=sqlite:///chat.db OPENAI_API_KEY=sk-... \
        uvicorn docs.examples.fastapi_app:app

Swap the storage by changing one variable, with no code change:

    CHATMEM_REPOSITORY_URL=redis://localhost:6379/0
    CHATMEM_REPOSITORY_URL=postgresql+psycopg://app:secret@db/app

Conversation ids are built on the server from the authenticated user and the chat name in
the path (``scoped_conversation_id``), so a client can never read or write another user's
conversation by guessing its id, and listing is restricted to the caller's own chats.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from pydantic import BaseModel, Field

from chatmem import (
    CONVERSATION_ID,
    AsyncChatClient,
    InvalidConversationIdError,
    scoped_conversation_id,
    split_conversation_id,
)
from chatmem.messages import message_text
from chatmem.openai import AsyncOpenAIChatModel
from chatmem_advisors import AsyncMessageChatMemoryAdvisor
from chatmem_repositories import ChatMemorySettings

# A stand-in for real authentication: bearer token -> user id. Use your identity provider.
TOKENS = {"token-alice": "alice", "token-bob": "bob"}


class Ask(BaseModel):
    text: str = Field(min_length=1, max_length=10_000)


class Answer(BaseModel):
    chat: str
    answer: str


class StoredLine(BaseModel):
    type: str
    text: str


def current_user(authorization: Annotated[str, Header()] = "") -> str:
    user = TOKENS.get(authorization.removeprefix("Bearer ").strip())
    if user is None:
        raise HTTPException(status_code=401, detail="unknown token")
    return user


def conversation_of(user: str, chat: str) -> str:
    try:
        return scoped_conversation_id(user, chat)
    except InvalidConversationIdError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = ChatMemorySettings()  # CHATMEM_REPOSITORY_URL, CHATMEM_MAX_MESSAGES, ...
    repository = settings.build_async_repository()
    model = AsyncOpenAIChatModel(
        model=os.environ.get("CHATMEM_CHAT_MODEL", "gpt-4o-mini"),
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
    )
    memory = settings.build_async_memory(repository)
    app.state.repository = repository
    app.state.client = (
        AsyncChatClient.builder(model)
        .default_system("You are a helpful assistant.")
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
        .build()
    )
    try:
        yield
    finally:
        await model.aclose()
        await repository.aclose()


app = FastAPI(title="chatmem FastAPI example", lifespan=lifespan)
User = Annotated[str, Depends(current_user)]


@app.post("/chats/{chat}/messages")
async def ask(chat: str, body: Ask, user: User, request: Request) -> Answer:
    conversation_id = conversation_of(user, chat)
    client: AsyncChatClient = request.app.state.client
    answer = await (
        client.prompt()
        .user(body.text)
        .advisors(lambda a: a.param(CONVERSATION_ID, conversation_id))
        .call()
        .content()
    )
    return Answer(chat=chat, answer=answer)


@app.get("/chats")
async def list_chats(user: User, request: Request) -> list[str]:
    page = await request.app.state.repository.list_conversations(owner=user, limit=100)
    return [split_conversation_id(cid)[1] for cid in page.conversation_ids]


@app.get("/chats/{chat}/messages")
async def history(chat: str, user: User, request: Request) -> list[StoredLine]:
    conversation_id = conversation_of(user, chat)
    stored = await request.app.state.repository.find_history(conversation_id, limit=100)
    return [StoredLine(type=s.message.type.value, text=message_text(s.message)) for s in stored]


@app.delete("/chats/{chat}", status_code=204)
async def delete_chat(chat: str, user: User, request: Request) -> None:
    await request.app.state.repository.delete_by_conversation_id(conversation_of(user, chat))

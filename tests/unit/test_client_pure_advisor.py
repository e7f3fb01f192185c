"""PureAdvisor: one advisor class, no I/O, driven by the sync and the async chain alike."""

from __future__ import annotations

import asyncio
import dataclasses

from chatmem import CONVERSATION_ID, AsyncChatClient, ChatClient
from chatmem.advisor import ChatClientRequest, ChatClientResponse, PureAdvisor
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel


class Recorder(PureAdvisor):
    """Adds a context value on the way in and rewrites the answer on the way out."""

    def __init__(self, order: int = 0) -> None:
        super().__init__(order=order)
        self.seen: list[str] = []

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        self.seen.append(f"before {request.context.get(CONVERSATION_ID)}")
        return request.with_context(recorded=True)

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        self.seen.append(f"after recorded={response.context.get('recorded')}")
        return dataclasses.replace(response, context={**response.context, "after": True})


def test_one_instance_serves_both_clients_by_default_and_per_request() -> None:
    advisor = Recorder()
    sync = ChatClient.builder(ScriptedChatModel(["a", "b"])).default_advisors(advisor).build()
    response = sync.prompt("hi").advisors({CONVERSATION_ID: "s"}).call().chat_client_response()
    assert response.context["after"] is True
    assert "".join(sync.prompt("hi").advisors({CONVERSATION_ID: "t"}).stream().content()) == "b"

    async def run() -> None:
        client = AsyncChatClient.create(AsyncScriptedChatModel(["c", "d"]))
        spec = client.prompt("hi").advisors(advisor, {CONVERSATION_ID: "u"})
        assert await spec.call().content() == "c"
        stream = client.prompt("hi").advisors(advisor, {CONVERSATION_ID: "v"}).stream()
        assert [p async for p in stream.content()] == ["d"]

    asyncio.run(run())
    assert advisor.seen == [
        "before s",
        "after recorded=True",
        "before t",
        "after recorded=True",
        "before u",
        "after recorded=True",
        "before v",
        "after recorded=True",
    ]


def test_order_and_name_are_kept_in_the_chain() -> None:
    calls: list[str] = []

    class Named(PureAdvisor):
        def before(self, request: ChatClientRequest) -> ChatClientRequest:
            calls.append(self.name)
            return request

    late, early = Named(order=10, name="late"), Named(order=-10, name="early")
    client = ChatClient.builder(ScriptedChatModel(["x"])).default_advisors(late, early).build()
    client.prompt("hi").call().content()
    assert calls == ["early", "late"]
    assert (early.name, early.order) == ("early", -10)

"""``chatmem chat``: talk to an OpenAI-compatible model with memory kept in a repository."""

from __future__ import annotations

import os
from collections.abc import Callable

from rich.markup import escape
from rich.text import Text

from chatmem import CONVERSATION_ID, ChatClient, ChatMemoryLog, ChatModelError
from chatmem_advisors import MessageChatMemoryAdvisor
from chatmem_cli._common import console, err_console, fail
from chatmem_repositories import redact_url
from chatmem_repositories.settings import ChatMemorySettings

__all__ = ["DEFAULT_CHAT_MODEL", "SETUP_HELP", "run_chat"]

DEFAULT_CHAT_MODEL = "gpt-4o-mini"
"""The model asked for when ``CHATMEM_CHAT_MODEL`` is not set."""

SETUP_HELP = (
    "no chat model endpoint is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL "
    "for an OpenAI-compatible server (for example OPENAI_BASE_URL=http://127.0.0.1:11434/v1 "
    "for Ollama; OPENAI_API_KEY is then optional), and optionally CHATMEM_CHAT_MODEL "
    f"(default {DEFAULT_CHAT_MODEL}). To see memory at work without a model, run: chatmem demo"
)
"""What ``chat`` prints when no endpoint is configured."""


def run_chat(
    repository: ChatMemoryLog,
    conversation_id: str,
    *,
    settings: ChatMemorySettings,
    system: str | None,
    read_line: Callable[[], str],
    model: str | None = None,
) -> int:
    """Chat until end of input or ``/exit``; every turn is remembered in ``repository``.

    Args:
        repository: Where the conversation lives.
        conversation_id: The conversation.
        settings: Window kind and size.
        system: A system message to send with every request, if any.
        model: The model to ask; default ``CHATMEM_CHAT_MODEL``, else
            :data:`DEFAULT_CHAT_MODEL`.
        read_line: Reads the user's next line; raises ``EOFError`` at the end.

    Returns:
        How many turns were answered.
    """
    api_key = os.environ.get("OPENAI_API_KEY") or None
    base_url = os.environ.get("OPENAI_BASE_URL") or None
    if api_key is None and base_url is None:
        fail(SETUP_HELP)
    # openai is an optional extra: import it only when chatting.
    try:
        from chatmem.openai import OpenAIChatModel
    except ModuleNotFoundError as exc:
        fail(str(exc))

    model_name = model or os.environ.get("CHATMEM_CHAT_MODEL") or DEFAULT_CHAT_MODEL
    memory = settings.build_memory(repository)
    turns = 0
    with OpenAIChatModel(model=model_name, api_key=api_key, base_url=base_url) as chat_model:
        builder = ChatClient.builder(chat_model).default_advisors(MessageChatMemoryAdvisor(memory))
        if system:
            builder = builder.default_system(system)
        client = builder.build()
        where = redact_url(base_url or "https://api.openai.com/v1")
        console.print(
            f"Chatting as {conversation_id!r} with {model_name} at {where}. "
            "End with /exit or Ctrl-D.",
            style="dim",
            soft_wrap=True,
        )
        while True:
            try:
                line = read_line().strip()
            except EOFError:
                break
            if line in ("/exit", "/quit"):
                break
            if not line:
                continue
            console.print(Text("assistant: ", style="green bold"), end="")
            try:
                stream = (
                    client.prompt()
                    .user(line)
                    .advisors(lambda a: a.param(CONVERSATION_ID, conversation_id))
                    .stream()
                    .content()
                )
                for piece in stream:
                    console.print(piece, end="", markup=False, highlight=False)
            except ChatModelError as exc:
                # A provider hiccup (rate limit, timeout, refused request) ends this turn
                # only: the stored conversation is intact and the user can go on.
                console.print()
                err_console.print(
                    f"[bold red]error:[/] the model call failed: {escape(str(exc))}. "
                    "The conversation is kept; try again or /exit.",
                    soft_wrap=True,
                )
                continue
            console.print()
            turns += 1
    return turns

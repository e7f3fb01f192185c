"""The commands (argument parsing and output), registered on the app in ``--help`` order.

The work, and the ``erase``, ``export``, ``import``, ``migrate`` and ``keys`` commands, live in
sibling modules.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import typer
from pydantic import TypeAdapter, ValidationError
from rich.markup import escape

from chatmem.backend import Duration
from chatmem_cli._chat import run_chat
from chatmem_cli._common import (
    UrlOption,
    command_errors,
    console,
    fail,
    open_log,
    resolve_url,
    settings,
)
from chatmem_cli._demo import run_demo
from chatmem_cli._doctor import doctor_checks, reach_server
from chatmem_cli._inspect import list_page, show_conversation
from chatmem_cli._maintenance import prune_older_than
from chatmem_cli._privacy_commands import erase_command, keys_app
from chatmem_cli._transfer_commands import export_command, import_command, migrate_command
from chatmem_cli._typer_app import OwnerOption, app, checked_conversation_id
from chatmem_repositories import redact_url

__all__ = ["app", "main"]

_DURATION: TypeAdapter[timedelta] = TypeAdapter(Duration)


def _duration(text: str) -> timedelta:
    try:
        return _DURATION.validate_python(text)
    except ValidationError:
        fail(f"{text!r} is not a duration: give seconds (3600) or ISO 8601 (P30D, PT12H)")


@command_errors
def conversations(
    url: UrlOption = None,
    owner: OwnerOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, metavar="N", help="Page size.")] = 20,
    cursor: Annotated[
        str | None, typer.Option(metavar="CURSOR", help="Start after this page cursor.")
    ] = None,
) -> None:
    """List conversations a page at a time, newest message first in each row."""
    with open_log(resolve_url(url)) as repository:
        list_page(repository, owner=owner, limit=limit, cursor=cursor)


@command_errors
def show(
    conversation_id: Annotated[str, typer.Argument(metavar="ID", help="The conversation.")],
    url: UrlOption = None,
    max_messages: Annotated[
        int | None,
        typer.Option(
            min=1, metavar="N", help="Message window size (default: CHATMEM_MAX_MESSAGES or 20)."
        ),
    ] = None,
    history: Annotated[bool, typer.Option(help="Also print the full history.")] = True,
) -> None:
    """Show what the model would get (the memory view) against the full stored history."""
    conversation_id = checked_conversation_id(conversation_id)
    with open_log(resolve_url(url)) as repository:
        found = show_conversation(
            repository,
            conversation_id,
            settings=settings(),
            max_messages=max_messages,
            history=history,
        )
    if not found:
        fail(f"no conversation {conversation_id!r}")


@command_errors
def delete(
    conversation_id: Annotated[str, typer.Argument(metavar="ID", help="The conversation.")],
    url: UrlOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a conversation and its whole history (asks first unless --yes)."""
    conversation_id = checked_conversation_id(conversation_id)
    with open_log(resolve_url(url)) as repository:
        if not repository.find_history(conversation_id, limit=1):
            fail(f"no conversation {conversation_id!r}")
        if not yes and not typer.confirm(
            f"Delete conversation {conversation_id!r} and its whole history?"
        ):
            fail("nothing deleted")
        repository.delete_by_conversation_id(conversation_id)
    console.print(f"Deleted conversation {conversation_id!r}.", markup=False)


@command_errors
def prune(
    url: UrlOption = None,
    expired: Annotated[
        bool, typer.Option("--expired", help="Purge conversations whose TTL has passed.")
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(
            metavar="AGE", help="Delete messages older than this (seconds, or ISO 8601 like P90D)."
        ),
    ] = None,
    owner: OwnerOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count, delete nothing.")] = False,
) -> None:
    """Delete expired conversations and/or messages older than a given age."""
    if not expired and older_than is None:
        fail("say what to prune: --expired, --older-than AGE, or both")
    age = _duration(older_than) if older_than is not None else None
    with open_log(resolve_url(url)) as repository:
        if expired:
            if dry_run:
                console.print("--expired: nothing counted in a dry run (expired data is hidden).")
            else:
                purged = repository.purge_expired()
                console.print(f"Purged {purged} expired conversation(s).")
        if age is not None:
            report = prune_older_than(repository, age, owner=owner, dry_run=dry_run)
            verb = "Would delete" if dry_run else "Deleted"
            console.print(
                f"{verb} {report.messages} message(s) older than {age} in "
                f"{report.conversations} conversation(s) ({report.emptied} emptied entirely)."
            )


@command_errors
def doctor(
    url: UrlOption = None,
    write: Annotated[
        bool, typer.Option(help="Also write, read back and delete a probe message.")
    ] = True,
) -> None:
    """Check the configured backend: driver, reachable, schema, versions, latency."""
    resolved = resolve_url(url)
    console.print(f"Repository: {redact_url(resolved)}", soft_wrap=True, markup=False)
    unreachable = reach_server(resolved)
    if unreachable is not None:
        checks = [unreachable]
    else:
        with open_log(resolved) as repository:
            checks = doctor_checks(repository, resolved, write=write)
    for check in checks:
        mark = "[green]ok[/]  " if check.ok else "[red]FAIL[/]"
        console.print(f"{mark} {check.name:<10} {escape(check.detail)}", soft_wrap=True)
    if not all(check.ok for check in checks):
        raise typer.Exit(1)


@command_errors
def chat(
    conversation_id: Annotated[str, typer.Argument(metavar="ID", help="The conversation.")],
    url: UrlOption = None,
    system: Annotated[
        str | None, typer.Option(metavar="TEXT", help="A system message sent with every request.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="NAME",
            help="The model to ask (default: $CHATMEM_CHAT_MODEL, else gpt-4o-mini).",
        ),
    ] = None,
) -> None:
    """Chat with an OpenAI-compatible model (OPENAI_API_KEY / OPENAI_BASE_URL), with memory.

    A provider error (rate limit, timeout, a refused request) is printed and the conversation
    goes on; what was said so far stays stored.
    """
    conversation_id = checked_conversation_id(conversation_id)
    with open_log(resolve_url(url)) as repository:
        run_chat(
            repository,
            conversation_id,
            settings=settings(),
            system=system,
            model=model,
            read_line=lambda: input("you: "),
        )


@command_errors
def demo(url: UrlOption = None) -> None:
    """Walk through a scripted conversation (no LLM, no server): what is sent, stored, evicted."""
    resolved = resolve_url(url)
    with open_log(resolved) as repository:
        run_demo(repository, redact_url(resolved))


# Registered here, in the order `chatmem --help` lists them: the demo first, then reading,
# moving, maintaining and chatting; the key commands last.
for _name, _command in (
    ("demo", demo),
    ("conversations", conversations),
    ("show", show),
    ("delete", delete),
    ("erase", erase_command),
    ("export", export_command),
    ("import", import_command),
    ("migrate", migrate_command),
    ("prune", prune),
    ("doctor", doctor),
    ("chat", chat),
):
    app.command(_name)(_command)
app.add_typer(keys_app)


def main() -> None:
    """Run the ``chatmem`` command line."""
    app()

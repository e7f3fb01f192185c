"""The typer application: argument parsing and output; the work lives in sibling modules."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Annotated, TextIO

import typer
from pydantic import TypeAdapter, ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chatmem import ChatMemError, validate_conversation_id
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
from chatmem_cli._inspect import list_page, show_conversation
from chatmem_cli._maintenance import doctor_checks, prune_older_than
from chatmem_cli._transfer import count_conversations, export_lines, import_lines, migrate
from chatmem_repositories import redact_url
from chatmem_repositories._options import Duration

__all__ = ["app", "main"]

app = typer.Typer(
    name="chatmem",
    help="Inspect, move and maintain chatmem conversations; try `chatmem demo` first.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

OwnerOption = Annotated[
    str | None, typer.Option("--owner", help="Only conversations of this owner.")
]
_DURATION: TypeAdapter[timedelta] = TypeAdapter(Duration)


def _duration(text: str) -> timedelta:
    try:
        return _DURATION.validate_python(text)
    except ValidationError:
        fail(f"{text!r} is not a duration: give seconds (3600) or ISO 8601 (P30D, PT12H)")


def _conversation_id(text: str) -> str:
    try:
        return validate_conversation_id(text)
    except ValueError as exc:
        fail(str(exc))


@app.command()
@command_errors
def conversations(
    url: UrlOption = None,
    owner: OwnerOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Page size.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="Start after this page cursor.")] = None,
) -> None:
    """List conversations a page at a time, newest message first in each row."""
    with open_log(resolve_url(url)) as repository:
        list_page(repository, owner=owner, limit=limit, cursor=cursor)


@app.command()
@command_errors
def show(
    conversation_id: Annotated[str, typer.Argument(metavar="ID", help="The conversation.")],
    url: UrlOption = None,
    max_messages: Annotated[
        int | None,
        typer.Option(min=1, help="Message window size (default: CHATMEM_MAX_MESSAGES or 20)."),
    ] = None,
    history: Annotated[bool, typer.Option(help="Also print the full history.")] = True,
) -> None:
    """Show what the model would get (the memory view) against the full stored history."""
    conversation_id = _conversation_id(conversation_id)
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


@app.command("export")
@command_errors
def export_command(
    output: Annotated[
        Path, typer.Argument(help="JSON Lines file to write, or - for stdout.")
    ] = Path("-"),
    url: UrlOption = None,
    owner: OwnerOption = None,
) -> None:
    """Export every message as JSON Lines (one message per line, lossless, streamed)."""
    with open_log(resolve_url(url)) as repository, ExitStack() as stack:
        out: TextIO = sys.stdout
        if str(output) != "-":
            out = stack.enter_context(output.open("w", encoding="utf-8"))
        conversations_written, messages = export_lines(repository, out, owner=owner)
    if str(output) != "-":
        console.print(
            f"Exported {messages} message(s) of {conversations_written} conversation(s) "
            f"to {output}."
        )


@app.command("import")
@command_errors
def import_command(
    source: Annotated[Path, typer.Argument(help="JSON Lines file to read, or - for stdin.")],
    url: UrlOption = None,
) -> None:
    """Import JSON Lines written by `export`; every line is checked before anything is written.

    Messages already stored are skipped; a message id already stored with different content
    is reported as a conflict and not written.
    """
    with open_log(resolve_url(url)) as repository, ExitStack() as stack:
        if str(source) == "-":
            # Checked first, then written: stdin is kept in a temporary file to read twice.
            lines: TextIO = stack.enter_context(
                tempfile.TemporaryFile("w+", encoding="utf-8", newline="")
            )
            shutil.copyfileobj(sys.stdin, lines)
            lines.seek(0)
        else:
            if not source.exists():
                fail(f"no such file: {source}")
            lines = stack.enter_context(source.open(encoding="utf-8"))
        try:
            report = import_lines(repository, lines)
        except ChatMemError as exc:
            fail(f"{exc}; nothing was imported")
        except UnicodeDecodeError as exc:
            fail(f"the input is not UTF-8 text ({exc}); nothing was imported")
    console.print(
        f"Read {report.read} message(s); stored {report.stored} new, skipped {report.known} known."
    )
    if report.conflicts:
        for line in report.conflicts[:20]:
            console.print(f"[red]conflict[/] {line}", soft_wrap=True)
        fail(
            f"{len(report.conflicts)} message(s) conflict with stored messages of the same id "
            "and were not imported"
        )


@app.command("migrate")
@command_errors
def migrate_command(
    source_url: Annotated[str, typer.Argument(metavar="SRC_URL", help="Copy from here.")],
    destination_url: Annotated[str, typer.Argument(metavar="DST_URL", help="Copy to here.")],
    owner: OwnerOption = None,
    verify: Annotated[
        bool, typer.Option(help="Compare message counts of every conversation after copying.")
    ] = True,
) -> None:
    """Copy every conversation between two backends; safe to re-run or resume."""
    started = time.perf_counter()
    with open_log(source_url) as source, open_log(destination_url) as destination:
        total = count_conversations(source, owner=owner)
        columns = (
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("conversations", total=total)
            report = migrate(
                source,
                destination,
                owner=owner,
                verify=verify,
                on_conversation=lambda _id, _n: progress.advance(task),
            )
    elapsed = time.perf_counter() - started
    console.print(
        f"Copied {report.conversations} conversation(s) from {redact_url(source_url)} to "
        f"{redact_url(destination_url)} in {elapsed:.1f} s: read {report.read} message(s), "
        f"stored {report.stored} new, skipped {report.read - report.stored} already there.",
        soft_wrap=True,
    )
    if report.extra:
        console.print(
            f"{report.extra} conversation(s) already held more messages in the destination."
        )
    if report.mismatches:
        for line in report.mismatches[:20]:
            console.print(f"[red]mismatch[/] {line}", soft_wrap=True)
        fail(f"{len(report.mismatches)} conversation(s) failed verification; re-run to resume")
    if verify:
        console.print("Verified: every conversation has all its messages in the destination.")


@app.command()
@command_errors
def prune(
    url: UrlOption = None,
    expired: Annotated[
        bool, typer.Option("--expired", help="Purge conversations whose TTL has passed.")
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(help="Delete messages older than this (seconds, or ISO 8601 like P90D)."),
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


@app.command()
@command_errors
def doctor(
    url: UrlOption = None,
    write: Annotated[
        bool, typer.Option(help="Also write, read back and delete a probe message.")
    ] = True,
) -> None:
    """Check the configured backend: driver, reachable, schema, versions, latency."""
    resolved = resolve_url(url)
    console.print(f"Repository: {redact_url(resolved)}", soft_wrap=True)
    with open_log(resolved) as repository:
        checks = doctor_checks(repository, resolved, write=write)
    for check in checks:
        mark = "[green]ok[/]  " if check.ok else "[red]FAIL[/]"
        console.print(f"{mark} {check.name:<10} {check.detail}", soft_wrap=True)
    if not all(check.ok for check in checks):
        raise typer.Exit(1)


@app.command()
@command_errors
def chat(
    conversation_id: Annotated[str, typer.Argument(metavar="ID", help="The conversation.")],
    url: UrlOption = None,
    system: Annotated[
        str | None, typer.Option(help="A system message sent with every request.")
    ] = None,
) -> None:
    """Chat with an OpenAI-compatible model (OPENAI_API_KEY / OPENAI_BASE_URL), with memory."""
    conversation_id = _conversation_id(conversation_id)
    with open_log(resolve_url(url)) as repository:
        run_chat(
            repository,
            conversation_id,
            settings=settings(),
            system=system,
            read_line=lambda: input("you: "),
        )


@app.command()
@command_errors
def demo(url: UrlOption = None) -> None:
    """Walk through a scripted conversation (no LLM, no server): what is sent, stored, evicted."""
    resolved = resolve_url(url)
    with open_log(resolved) as repository:
        run_demo(repository, redact_url(resolved))


def main() -> None:
    """Run the ``chatmem`` command line."""
    app()

"""The ``export``, ``import`` and ``migrate`` commands: moving conversations, with progress."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.markup import escape

from chatmem import ChatMemError
from chatmem.privacy import export_owner
from chatmem_cli._common import (
    UrlOption,
    command_errors,
    console,
    err_console,
    fail,
    open_log,
    resolve_url,
)
from chatmem_cli._doctor import reach_server
from chatmem_cli._transfer_engine import count_conversations, export_lines, import_lines, migrate
from chatmem_cli._typer_app import OwnerOption, progress_bar
from chatmem_cli.importers.sources import SOURCES, import_conversations, read_source
from chatmem_repositories import redact_url

__all__ = ["MIGRATE_CONCURRENCY", "export_command", "import_command", "migrate_command"]

MIGRATE_CONCURRENCY = 4
"""Conversations ``migrate`` copies at once by default (their round trips overlap)."""


@command_errors
def export_command(
    output: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE", help="JSON Lines file to write, or - for stdout (the default)."
        ),
    ] = None,
    url: UrlOption = None,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner",
            metavar="OWNER",
            help="Only this owner's data: their conversations, every fork of them, summaries.",
        ),
    ] = None,
    output_option: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="The file to write, as FILE (- for stdout)."
        ),
    ] = None,
) -> None:
    """Export messages as JSON Lines (one message per line, lossless, streamed).

    With --owner, a person's data: what `chatmem erase --owner` deletes, each message with
    its position, and each summary on a line of its own.
    """
    if output is not None and output_option is not None and output != output_option:
        fail("give the file once: as FILE or as --output, not both")
    target = output_option or output or Path("-")
    if owner is not None and not owner:
        fail("--owner must not be empty")
    with open_log(resolve_url(url)) as repository, ExitStack() as stack:
        out: TextIO = sys.stdout
        if str(target) != "-":
            out = stack.enter_context(target.open("w", encoding="utf-8"))
        total = count_conversations(repository, owner=owner)
        # The bar goes to stderr: stdout may be the export itself.
        with progress_bar(err_console) as progress:
            task = progress.add_task("export", total=total)
            if owner is not None:
                report = export_owner(
                    repository, owner, out, on_conversation=lambda _id: progress.advance(task)
                )
            else:
                conversations_written, messages = export_lines(
                    repository,
                    out,
                    on_conversation=lambda _id, _n: progress.advance(task),
                )
    where = f" to {target}." if str(target) != "-" else "."
    if owner is None:
        err_console.print(
            f"Exported {messages} message(s) of {conversations_written} conversation(s){where}",
            soft_wrap=True,
        )
        return
    err_console.print(
        f"Exported owner {owner!r}: {report.messages} message(s) and event(s) and "
        f"{report.summaries} summary(ies) of {report.conversations} conversation(s) and "
        f"{report.forks} fork(s) of them{where}",
        markup=False,
        soft_wrap=True,
    )


@command_errors
def import_command(
    source: Annotated[
        Path, typer.Argument(metavar="FILE", help="JSON Lines file to read, or - for stdin.")
    ],
    url: UrlOption = None,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Conversations imported at once (1: one after another)."
        ),
    ] = MIGRATE_CONCURRENCY,
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
        progress = stack.enter_context(progress_bar(console, "messages"))
        task = progress.add_task("import", total=None)
        try:
            report = import_lines(
                repository,
                lines,
                concurrency=concurrency,
                on_checked=lambda total: progress.update(task, total=total),
                on_batch=lambda count: progress.advance(task, count),
            )
        except ChatMemError as exc:
            progress.stop()
            fail(f"{exc}; nothing was imported")
        except UnicodeDecodeError as exc:
            progress.stop()
            fail(f"the input is not UTF-8 text ({exc}); nothing was imported")
    console.print(
        f"Read {report.read} message(s); stored {report.stored} new, skipped {report.known} known."
    )
    if report.conflicts:
        for line in report.conflicts[:20]:
            console.print(f"[red]conflict[/] {escape(line)}", soft_wrap=True)
        fail(
            f"{len(report.conflicts)} message(s) conflict with stored messages of the same id "
            "and were not imported"
        )


SourceKindOption = Annotated[
    str,
    typer.Option(
        "--from",
        metavar="KIND",
        help="What SRC_URL holds: chatmem (a chatmem repository), or another library's "
        "conversations: " + ", ".join(SOURCES) + ". See docs/migrating.md.",
    ),
]


def _source_options(
    table: str | None,
    prefix: str | None,
    schema: str | None,
    keyspace: str | None,
    collection: str | None,
    option: list[str] | None,
) -> dict[str, str]:
    given = {
        "table": table,
        "prefix": prefix,
        "schema": schema,
        "keyspace": keyspace,
        "collection": collection,
    }
    options = {name: value for name, value in given.items() if value is not None}
    for item in option or []:
        name, equals, value = item.partition("=")
        if not equals or not name:
            fail(f"--option takes NAME=VALUE, not {item!r}")
        options[name] = value
    return options


@command_errors
def migrate_command(
    source_url: Annotated[
        str, typer.Argument(metavar="SRC_URL", help="Copy from here (a URL, or a file's path).")
    ],
    destination_url: Annotated[str, typer.Argument(metavar="DST_URL", help="Copy to here.")],
    kind: SourceKindOption = "chatmem",
    owner: OwnerOption = None,
    table: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The source's table (--from a SQL or Cassandra kind)."),
    ] = None,
    prefix: Annotated[
        str | None,
        typer.Option(metavar="PREFIX", help="The source's key prefix (--from a Redis kind)."),
    ] = None,
    schema: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The source's schema (--from llama-index-postgres)."),
    ] = None,
    keyspace: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The source's keyspace (--from spring-ai-cassandra)."),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The source's collection (--from spring-ai-mongodb)."),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            metavar="NAME=VALUE",
            help="Any other keyword of the source's reader (repeatable).",
        ),
    ] = None,
    verify: Annotated[
        bool, typer.Option(help="Check every conversation in the destination after copying.")
    ] = True,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Conversations copied at once (1: one after another)."
        ),
    ] = MIGRATE_CONCURRENCY,
) -> None:
    """Copy every conversation into a backend, from another backend or another library's store.

    Safe to re-run or resume: messages already in the destination are not stored again.
    """
    options = _source_options(table, prefix, schema, keyspace, collection, option)
    if kind != "chatmem":
        if owner is not None:
            fail("--owner selects conversations of a chatmem source; other sources have none")
        _migrate_from_source(
            kind, source_url, destination_url, options, verify=verify, concurrency=concurrency
        )
        return
    if options:
        fail(
            f"--{next(iter(options))} applies to --from another library's store, "
            "not to a chatmem source"
        )
    started = time.perf_counter()
    with open_log(source_url) as source, open_log(destination_url) as destination:
        total = count_conversations(source, owner=owner)
        with progress_bar(console) as progress:
            task = progress.add_task("migrate", total=total)
            report = migrate(
                source,
                destination,
                owner=owner,
                verify=verify,
                concurrency=concurrency,
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
            console.print(f"[red]mismatch[/] {escape(line)}", soft_wrap=True)
        fail(f"{len(report.mismatches)} conversation(s) failed verification; re-run to resume")
    if verify:
        console.print("Verified: every conversation has all its messages in the destination.")


def _migrate_from_source(
    kind: str,
    source_url: str,
    destination_url: str,
    options: dict[str, str],
    *,
    verify: bool,
    concurrency: int,
) -> None:
    started = time.perf_counter()
    conversations = read_source(kind, source_url, **options)
    if kind != "llama-index-simple":
        unreachable = reach_server(source_url)
        if unreachable is not None:
            fail(f"{redact_url(source_url)}: {unreachable.detail}")
    with open_log(destination_url) as destination, progress_bar(console) as progress:
        task = progress.add_task(f"migrate from {kind}", total=None)
        try:
            report = import_conversations(
                conversations,
                destination,
                verify=verify,
                concurrency=concurrency,
                on_conversation=lambda _conversation, _new: progress.advance(task),
            )
        except ChatMemError:
            raise
        except Exception as exc:  # a driver's error while reading the source: one line
            progress.stop()
            fail(
                f"reading {kind} at {redact_url(source_url)} failed: {type(exc).__name__}: "
                f"{exc}; conversations already copied stay (re-run to resume)"
            )
    elapsed = time.perf_counter() - started
    console.print(
        f"Read {report.conversations} conversation(s) from {kind} at {redact_url(source_url)} "
        f"into {redact_url(destination_url)} in {elapsed:.1f} s: read {report.messages_read} "
        f"message(s), stored {report.messages_stored} new, skipped "
        f"{report.messages_read - report.messages_stored} already there "
        f"({report.conversations_skipped} conversation(s) already complete).",
        soft_wrap=True,
    )
    if report.left_out:
        console.print(
            f"{report.left_out} stored message(s) left out: the source kept too little of "
            "them to make a message.",
            soft_wrap=True,
        )
    console.print(f"Not kept by {kind}: {SOURCES[kind].loses}.", soft_wrap=True)
    if report.mismatches:
        for line in report.mismatches[:20]:
            console.print(f"[red]mismatch[/] {escape(line)}", soft_wrap=True)
        fail(f"{len(report.mismatches)} conversation(s) failed verification; re-run to resume")
    if verify:
        console.print("Verified: every conversation has all its messages in the destination.")

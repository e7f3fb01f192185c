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
from chatmem_cli._application import OwnerOption, progress_bar
from chatmem_cli._common import (
    UrlOption,
    command_errors,
    console,
    err_console,
    fail,
    open_log,
    resolve_url,
)
from chatmem_cli._transfer import count_conversations, export_lines, import_lines, migrate
from chatmem_repositories import redact_url

__all__ = ["export_command", "import_command", "migrate_command"]


@command_errors
def export_command(
    output: Annotated[
        Path, typer.Argument(metavar="FILE", help="JSON Lines file to write, or - for stdout.")
    ] = Path("-"),
    url: UrlOption = None,
    owner: OwnerOption = None,
) -> None:
    """Export every message as JSON Lines (one message per line, lossless, streamed)."""
    with open_log(resolve_url(url)) as repository, ExitStack() as stack:
        out: TextIO = sys.stdout
        if str(output) != "-":
            out = stack.enter_context(output.open("w", encoding="utf-8"))
        total = count_conversations(repository, owner=owner)
        # The bar goes to stderr: stdout may be the export itself.
        with progress_bar(err_console) as progress:
            task = progress.add_task("export", total=total)
            conversations_written, messages = export_lines(
                repository,
                out,
                owner=owner,
                on_conversation=lambda _id, _n: progress.advance(task),
            )
    err_console.print(
        f"Exported {messages} message(s) of {conversations_written} conversation(s)"
        + (f" to {output}." if str(output) != "-" else "."),
        soft_wrap=True,
    )


@command_errors
def import_command(
    source: Annotated[
        Path, typer.Argument(metavar="FILE", help="JSON Lines file to read, or - for stdin.")
    ],
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
        progress = stack.enter_context(progress_bar(console, "messages"))
        task = progress.add_task("import", total=None)
        try:
            report = import_lines(
                repository,
                lines,
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
        with progress_bar(console) as progress:
            task = progress.add_task("migrate", total=total)
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
            console.print(f"[red]mismatch[/] {escape(line)}", soft_wrap=True)
        fail(f"{len(report.mismatches)} conversation(s) failed verification; re-run to resume")
    if verify:
        console.print("Verified: every conversation has all its messages in the destination.")

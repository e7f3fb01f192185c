"""The typer application object and what its commands share (options, progress bars)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chatmem import __version__, validate_conversation_id
from chatmem_cli._common import fail

__all__ = ["OwnerOption", "app", "checked_conversation_id", "progress_bar"]


def _print_version(value: bool) -> None:
    if value:
        print(f"chatmem {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="chatmem",
    help="Inspect, move and maintain chatmem conversations; try `chatmem demo` first.",
    no_args_is_help=True,
    # `chatmem --install-completion` installs shell completion (bash, zsh, fish, PowerShell).
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain click help: typer's rich panels print a `<bool>` type next to every flag.
    rich_markup_mode=None,
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print chatmem's version and exit.",
        ),
    ] = False,
) -> None:
    """Inspect, move and maintain chatmem conversations; try `chatmem demo` first."""


OwnerOption = Annotated[
    str | None, typer.Option("--owner", metavar="OWNER", help="Only conversations of this owner.")
]


def checked_conversation_id(text: str) -> str:
    """Return ``text`` if it is a valid conversation id, else exit with one red line.

    Args:
        text: The id given on the command line.
    """
    try:
        return validate_conversation_id(text)
    except ValueError as exc:
        fail(str(exc))


def progress_bar(console: Console, unit: str = "conversations") -> Progress:
    """Return the progress bar every long command shows: count, bar, done/total, elapsed.

    Args:
        console: Where to draw it (stderr when stdout carries data).
        unit: What is counted.
    """
    return Progress(
        TextColumn(unit),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )

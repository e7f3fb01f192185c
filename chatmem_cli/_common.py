"""What every command shares: the repository URL, opening repositories, reporting errors."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import platformdirs
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from chatmem import ChatMemError, ChatMemoryLog
from chatmem_cli._doctor import reach_server
from chatmem_repositories import create_repository, redact_url
from chatmem_repositories.settings import ChatMemorySettings

__all__ = [
    "UrlOption",
    "command_errors",
    "console",
    "default_url",
    "describe_settings_error",
    "err_console",
    "fail",
    "open_log",
    "resolve_url",
    "settings",
]

SETTINGS_PREFIX = "CHATMEM_"
P = ParamSpec("P")
R = TypeVar("R")

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        "-u",
        metavar="URL",
        help="Repository URL. Default: $CHATMEM_REPOSITORY_URL, else an embedded SQLite file "
        "in your data directory.",
        show_default=False,
    ),
]


def default_url() -> str:
    """Return the command line's default URL: an SQLite file in the user's data directory.

    ``CHATMEM_DATA_DIR`` overrides the directory (tests and CI use it).
    """
    override = os.environ.get("CHATMEM_DATA_DIR")
    if override:
        directory = Path(override)
    else:
        directory = platformdirs.user_data_path("chatmem", appauthor=False)
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{directory / 'chatmem.db'}"


def settings() -> ChatMemorySettings:
    """Return the settings from the environment and ``.env`` (window size, TTL, options).

    Raises:
        typer.Exit: With status 1 and one line naming the bad variable and what it needs.
    """
    try:
        return ChatMemorySettings()
    except ValidationError as exc:
        fail(describe_settings_error(exc))
    except ValueError as exc:
        fail(f"bad CHATMEM_* setting: {exc}")


def describe_settings_error(exc: ValidationError) -> str:
    """Say in one line which ``CHATMEM_*`` variables are wrong, their values, and why.

    Args:
        exc: What pydantic raised while reading the settings.
    """
    problems = []
    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else "?"
        variable = f"{SETTINGS_PREFIX}{field.upper()}"
        problems.append(f"{variable}={error.get('input')!r}: {error['msg']}")
    return "bad setting " + "; ".join(problems)


def resolve_url(url: str | None) -> str:
    """Pick the URL: ``--url``, then ``CHATMEM_REPOSITORY_URL`` (or ``.env``), then the default.

    Args:
        url: The ``--url`` option, if given.
    """
    if url:
        return url
    configured = settings()
    if "repository_url" in configured.model_fields_set:
        return configured.repository_url
    return default_url()


def fail(message: str, code: int = 1) -> NoReturn:
    """Print an error on stderr and exit with ``code`` (never returns).

    Args:
        message: What went wrong and, where possible, what to do.
        code: The exit status.
    """
    # Escaped: messages name extras like "chatmem[redis]", which rich would take for markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def open_log(url: str, **options: Any) -> Iterator[ChatMemoryLog]:
    """Open a repository with the log capabilities every command needs; close it after.

    The ``CHATMEM_REPOSITORY_OPTIONS`` and ``CHATMEM_TTL`` settings apply only to the URL they
    configure, so ``migrate`` can open two different backends.

    Args:
        url: The repository URL.
        **options: Backend options.

    Raises:
        typer.Exit: With status 1 when the repository cannot be created.
    """
    try:
        repository = create_repository(url, **options)
    except ChatMemError as exc:
        fail(str(exc))
    # A server that is down is one line now, not a driver's timeout and report later.
    unreachable = reach_server(url)
    if unreachable is not None:
        repository.close()
        fail(f"{redact_url(url)}: {unreachable.detail}")
    try:
        # Checked whatever create_repository's annotation says: a third-party backend's
        # factory is found at run time and may return only the four Spring AI methods.
        if not isinstance(repository, ChatMemoryLog):
            fail(f"the repository at {redact_url(url)} does not support paging its history")
        yield repository
    finally:
        repository.close()


def command_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn chatmem errors raised by a command into one red line and exit status 1.

    Args:
        command: A typer command function.
    """

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except ChatMemError as exc:
            hint = ""
            if "does not exist" in str(exc) or "no such table" in str(exc):
                hint = (
                    " (the schema is missing: add ?initialize_schema=always to the URL once, "
                    "or create it with your migration tool)"
                )
            fail(f"{exc}{hint}")

    return run

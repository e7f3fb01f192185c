"""The ``erase`` command and the ``keys`` commands: a person's data, and encryption keys."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from chatmem import ChatMemError
from chatmem.privacy import erase_owner, rotate_keys
from chatmem_cli._common import (
    UrlOption,
    command_errors,
    console,
    err_console,
    fail,
    open_log,
    resolve_url,
)
from chatmem_cli._transfer_commands import MIGRATE_CONCURRENCY
from chatmem_cli._transfer_engine import count_conversations
from chatmem_cli._typer_app import progress_bar
from chatmem_repositories import redact_url

__all__ = ["erase_command", "keys_app"]

ConcurrencyOption = Annotated[
    int,
    typer.Option(min=1, metavar="N", help="Conversations done at once (1: one after another)."),
]
_EXTRA = (
    'encryption needs its extra (cryptography is not installed): pip install "chatmem[encryption]"'
)


def _encryption() -> Any:
    """The ``chatmem.encryption`` module, or one red line naming the extra to install."""
    try:
        from chatmem import encryption
    except ImportError:
        fail(_EXTRA)
    return encryption


@command_errors
def erase_command(
    owner: Annotated[
        str, typer.Option("--owner", metavar="OWNER", help="The owner whose data is erased.")
    ],
    url: UrlOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    concurrency: ConcurrencyOption = MIGRATE_CONCURRENCY,
) -> None:
    """Erase everything stored of an owner: conversations, forks of them, summaries.

    Asks first unless --yes. Safe to run again: a run after an interrupted one finishes it.
    """
    if not owner:
        fail("--owner must not be empty")
    with open_log(resolve_url(url)) as repository:
        total = count_conversations(repository, owner=owner)
        if not total:
            console.print(f"Owner {owner!r} has no conversations: nothing to erase.", markup=False)
            return
        if not yes and not typer.confirm(
            f"Erase the {total} conversation(s) of owner {owner!r}, every fork of them and "
            "their summaries?"
        ):
            fail("nothing erased")
        with progress_bar(console) as progress:
            task = progress.add_task("erase", total=total)
            report = erase_owner(
                repository,
                owner,
                concurrency=concurrency,
                on_conversation=lambda _id: progress.advance(task),
            )
    console.print(
        f"Erased owner {owner!r}: {report.conversations} conversation(s) and "
        f"{report.forks} fork(s) of them, {report.messages} message(s) and event(s), "
        f"{report.summaries} summary(ies).",
        markup=False,
        soft_wrap=True,
    )


keys_app = typer.Typer(
    name="keys",
    help="Encryption keys: generate a key-encryption key, rotate data keys to the current one.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _default_key_id() -> str:
    # A date says which key is newer at a glance.
    return "k" + datetime.now(UTC).strftime("%Y%m%d%H%M%S")


@keys_app.command("generate")
def keys_generate(
    key_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="ID",
            help="The key's id (letters, digits, _ and -; at most 40). Default: k and the time.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print a new key-encryption key as ID:BASE64, an entry of CHATMEM_ENCRYPTION_KEYS.

    Only the entry goes to stdout, so it can be appended to a key file. Put it first in the
    key list (the first key wraps new data keys) and keep the old keys after it until
    `chatmem keys rotate` has run.
    """
    encryption = _encryption()
    chosen = key_id if key_id is not None else _default_key_id()
    key = encryption.generate_key()
    try:
        encryption.StaticKeyProvider({chosen: base64.b64decode(key)})
    except ChatMemError as exc:
        fail(str(exc))
    print(f"{chosen}:{key}")
    err_console.print(
        f"Key {chosen!r}: put it first in ${encryption.ENV_KEYS} (or the key file) on every "
        "process, keep the old keys after it, then run `chatmem keys rotate`.",
        markup=False,
        soft_wrap=True,
    )


@keys_app.command("rotate")
@command_errors
def keys_rotate(
    url: UrlOption = None, concurrency: ConcurrencyOption = MIGRATE_CONCURRENCY
) -> None:
    """Wrap every conversation's data keys by the current key (the first of the key list).

    The URL must have encryption on (?encryption=env or ?encryption=file:PATH). Messages are
    not rewritten. Safe to run beside writers and to run again.
    """
    encryption = _encryption()
    resolved = resolve_url(url)
    with open_log(resolved) as repository:
        if not isinstance(repository, encryption.EncryptedLog):
            fail(
                f"{redact_url(resolved)} has encryption off: rotating keys needs it on. Add "
                f"?encryption=env to the URL (keys from ${encryption.ENV_KEYS}, the new key "
                "first, the old ones after it) or ?encryption=file:PATH"
            )
        current = repository.keys.current_key_id
        total = count_conversations(repository)
        with progress_bar(console) as progress:
            task = progress.add_task("rotate", total=total)
            report = rotate_keys(
                repository,
                concurrency=concurrency,
                on_conversation=lambda _id: progress.advance(task),
            )
    console.print(
        f"Rotated {report.rewrapped} data key(s) in {report.conversations} conversation(s): "
        f"every data key is wrapped by key {current!r}. Once every process has {current!r} "
        "first in its key list, the other keys can be dropped.",
        markup=False,
        soft_wrap=True,
    )

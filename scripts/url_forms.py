#!/usr/bin/env python3
"""Print the URL-forms table of docs/configuration.md from real runs.

For every backend's URL forms (single host, several hosts, SRV, IPv6, with and without
credentials, with secrets in the query string) this builds the repository, runs
``chatmem doctor --no-write`` on it and makes one call, all against closed ports on the local
machine, and records what each prints. ``S3CRET`` stands for every credential; the last
column says whether it appeared anywhere.

Usage: python scripts/url_forms.py > /tmp/url-forms.md   (about two minutes)
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

from typer.testing import CliRunner

from chatmem import ChatMemError
from chatmem_cli import app
from chatmem_repositories import create_repository

SECRET = "S3CRET"

FORMS: list[tuple[str, str, str]] = [
    ("memory", "plain", "memory://?ttl=60"),
    ("SQLite", "file", "sqlite:////nonexistent-dir/chat.db"),
    ("PostgreSQL", "single host", "postgresql+psycopg://127.0.0.1:1/app"),
    ("PostgreSQL", "credentials", f"postgresql+psycopg://app:{SECRET}@127.0.0.1:1/app"),
    ("PostgreSQL", "password in query", f"postgresql+psycopg://app@127.0.0.1:1/app?password={SECRET}"),
    ("PostgreSQL", "several hosts", f"postgresql+psycopg://app:{SECRET}@127.0.0.1:1,127.0.0.2:1/app"),
    ("PostgreSQL", "IPv6", f"postgresql+psycopg://app:{SECRET}@[::1]:1/app"),
    ("MySQL", "credentials", f"mysql+pymysql://app:{SECRET}@127.0.0.1:1/app"),
    ("MySQL", "several hosts", f"mysql+pymysql://app:{SECRET}@127.0.0.1:1,127.0.0.2:1/app"),
    ("Redis", "single host", "redis://127.0.0.1:1/0"),
    ("Redis", "password only", f"redis://:{SECRET}@127.0.0.1:1/0"),
    ("Redis", "user, IPv6", f"redis://app:{SECRET}@[::1]:1/0"),
    ("Redis", "TLS", f"rediss://:{SECRET}@127.0.0.1:1/0"),
    ("Redis", "several hosts", f"redis://:{SECRET}@127.0.0.1:1,127.0.0.2:1/0"),
    ("Redis", "unclosed IPv6", f"redis://:{SECRET}@[::1:6379/0"),
    ("Redis", "Sentinel", f"redis+sentinel://:{SECRET}@127.0.0.1:1,127.0.0.2:1/mymaster/0"),
    ("Redis", "Sentinel, no service", f"redis+sentinel://:{SECRET}@127.0.0.1:1"),
    ("MongoDB", "single host", "mongodb://127.0.0.1:1/app"),
    ("MongoDB", "credentials", f"mongodb://app:{SECRET}@127.0.0.1:1/app?authSource=admin"),
    (
        "MongoDB",
        "replica set",
        f"mongodb://app:{SECRET}@127.0.0.1:1,127.0.0.2:1/app?replicaSet=rs",
    ),
    (
        "MongoDB",
        "secret in query",
        f"mongodb://127.0.0.1:1/app?tls=true&tlsCertificateKeyFilePassword={SECRET}",
    ),
    ("MongoDB", "SRV", f"mongodb+srv://app:{SECRET}@cluster0.example.com/app"),
    ("MongoDB", "malformed port", f"mongodb://app:{SECRET}@127.0.0.1:27x17/app"),
    ("Cassandra", "single host", "cassandra://127.0.0.1:1/chat"),
    ("Cassandra", "several hosts", f"cassandra://app:{SECRET}@127.0.0.1:1,127.0.0.2:1/chat"),
    ("Cassandra", "IPv6", f"cassandra://app:{SECRET}@[::1]:1/chat"),
    ("Cassandra", "port out of range", f"cassandra://app:{SECRET}@127.0.0.1:99999/chat"),
    ("Neo4j", "single host", "bolt://127.0.0.1:1"),
    ("Neo4j", "credentials", f"neo4j://neo4j:{SECRET}@127.0.0.1:1/neo4j"),
    ("Neo4j", "password in query", f"bolt://127.0.0.1:1?user=neo4j&password={SECRET}"),
    ("Neo4j", "several hosts", f"neo4j://neo4j:{SECRET}@127.0.0.1:1,127.0.0.2:1"),
]  # fmt: skip


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _cell(text: str) -> str:
    return "`" + _one_line(text).replace("|", "\\|").replace("`", "'") + "`"


def _repr_and_error(url: str) -> tuple[str, str]:
    try:
        repository: Any = create_repository(url)
    except ChatMemError as exc:
        message = f"{type(exc).__name__}: {exc}"
        return message, "(not built)"
    shown = repr(repository)
    try:
        repository.list_conversations(limit=1)
        error = "(no error)"
    except ChatMemError as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        repository.close()
    return shown, error


def _doctor(url: str) -> str:
    with tempfile.TemporaryDirectory() as home:
        env = {"CHATMEM_DATA_DIR": home, "COLUMNS": "400"}
        result = CliRunner().invoke(app, ["doctor", "--url", url, "--no-write"], env=env)
    lines = [line for line in result.output.splitlines() if line.strip()]
    kept = [line for line in lines if not line.lstrip().startswith("ok   versions")]
    return " / ".join(kept)


def main() -> None:
    """Print the table as Markdown."""
    print("| backend | form | URL | `repr` | `chatmem doctor` | first call | secret shown |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for backend, form, url in FORMS:
        print(f"{backend}: {form}", file=sys.stderr)
        shown, error = _repr_and_error(url)
        doctor = _doctor(url)
        leaked = "yes" if SECRET in shown + error + doctor else "no"
        cells = [backend, form, _cell(url), _cell(shown), _cell(doctor), _cell(error), leaked]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

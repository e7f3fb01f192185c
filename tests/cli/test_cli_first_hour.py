"""What a new user meets first on the command line: version, help, delete, progress, chat
errors, one-line errors and a doctor that says what is wrong."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatmem import AssistantMessage, UserMessage, __version__
from chatmem.encryption import generate_key
from chatmem.testing import OpenAITestServer, ScriptedCompletion
from chatmem_cli import app
from chatmem_cli._doctor import drivers_for
from chatmem_repositories import create_repository
from tests.support.environment import clear_settings
from tests.support.servers import server_url

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "160")


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    with create_repository(url) as repository:
        for n in range(3):
            repository.append(f"c{n}", [UserMessage(f"hi {n}"), AssistantMessage(f"hello {n}")])
    return url


def invoke(*args: str, input: str | None = None) -> tuple[int, str]:  # noqa: A002
    result = runner.invoke(app, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def lines_of(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def test_version() -> None:
    assert invoke("--version") == (0, f"chatmem {__version__}\n")


def test_help_shows_completion_and_no_type_tags() -> None:
    code, out = invoke("--help")
    assert code == 0
    assert "--install-completion" in out
    for command in ("show", "delete", "export", "import", "chat"):
        code, out = invoke(command, "--help")
        assert code == 0
        assert "<bool>" not in out


def test_delete_asks_first(db: str) -> None:
    code, out = invoke("delete", "c0", "--url", db, input="n\n")
    assert code == 1
    assert "nothing deleted" in out
    code, out = invoke("delete", "c0", "--url", db, input="y\n")
    assert code == 0, out
    assert "Deleted conversation 'c0'." in out
    code, out = invoke("delete", "c1", "--url", db, "--yes")
    assert code == 0, out
    with create_repository(db) as repository:
        assert repository.find_history("c0", limit=5) == []
        assert repository.find_history("c1", limit=5) == []
        assert len(repository.find_history("c2", limit=5)) == 2


def test_delete_of_an_unknown_conversation_fails(db: str) -> None:
    code, out = invoke("delete", "nope", "--url", db, "--yes")
    assert code == 1
    assert lines_of(out) == ["error: no conversation 'nope'"]


def test_export_and_import_show_progress(db: str, tmp_path: Path) -> None:
    exported = tmp_path / "all.jsonl"
    code, out = invoke("export", str(exported), "--url", db)
    assert code == 0, out
    assert "export" in out
    assert "3/3" in out  # conversations done / total
    target = f"sqlite:///{tmp_path / 'target.db'}"
    code, out = invoke("import", str(exported), "--url", target)
    assert code == 0, out
    assert "6/6" in out  # messages done / total
    assert "stored 6 new" in out


def test_a_bad_setting_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_MAX_MESSAGES", "lots")
    code, out = invoke("show", "x")
    assert code == 1
    assert lines_of(out) == [
        "error: bad setting CHATMEM_MAX_MESSAGES='lots': Input should be a valid integer, "
        "unable to parse string as an integer"
    ]


def test_an_option_naming_an_extra_is_printed_whole(db: str) -> None:
    # Rich markup would swallow "[redis]": the error must keep the brackets.
    code, out = invoke("show", "a[b]", "--url", db)
    assert code == 1
    assert "a[b]" in out


# -- chat --------------------------------------------------------------------------------------


def test_chat_model_option_and_a_provider_error_mid_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    with OpenAITestServer() as server:
        server.reply_text("Hello, Mr Bond.")
        server.reply_error(400, "Invalid prompt: flagged by the content filter")
        server.reply(ScriptedCompletion(text="Shaken, not", fail_after_chunks=1))
        server.reply_text("Your name is James Bond.")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out = invoke(
            "chat",
            "007",
            "--url",
            url,
            "--model",
            "model-from-option",
            input="My name is James Bond\nAre you there?\nMartini?\nWhat is my name?\n/exit\n",
        )
        assert code == 0, out
        assert "Invalid prompt: flagged by the content filter" in out
        assert out.count("The conversation is kept") == 2
        assert "Your name is James Bond." in out
        assert {r["model"] for r in server.chat_requests} == {"model-from-option"}
        last = [m["content"] for m in server.chat_requests[-1]["messages"]]
        assert last[:2] == ["My name is James Bond", "Hello, Mr Bond."]
        assert last[-1] == "What is my name?"
    with create_repository(url) as repository:
        stored = [s.message.text for s in repository.find_history("007", limit=20)]
    assert stored[:2] == ["My name is James Bond", "Hello, Mr Bond."]
    assert stored[-2:] == ["What is my name?", "Your name is James Bond."]


# -- doctor ------------------------------------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    "scheme",
    ["mongodb://127.0.0.1:{port}/x", "bolt://127.0.0.1:{port}", "redis://127.0.0.1:{port}/0"],
)
def test_doctor_on_a_closed_port_is_one_fast_line(scheme: str) -> None:
    started = time.monotonic()
    code, out = invoke("doctor", "--url", scheme.format(port=_closed_port()))
    assert time.monotonic() - started < 5  # the driver alone waited 5 s or more before
    assert code == 1
    failed = [line for line in lines_of(out) if line.startswith("FAIL")]
    assert len(failed) == 1
    assert "cannot connect to 127.0.0.1:" in failed[0]
    assert "connection refused" in failed[0]
    assert "schema" not in out
    assert "Topology" not in out


@pytest.mark.parametrize("command", [["conversations"], ["show", "x"], ["export", "-"]])
def test_every_command_says_in_one_line_that_the_server_is_down(command: list[str]) -> None:
    port = _closed_port()
    code, out = invoke(*command, "--url", f"mongodb://127.0.0.1:{port}/x")
    assert code == 1
    assert lines_of(out) == [
        f"error: mongodb://127.0.0.1:{port}/x: cannot connect to 127.0.0.1:{port} (connection "
        "refused): is the server running, and are the host and port in the URL right?"
    ]


def test_doctor_tries_every_host_of_a_list_with_an_ipv6_one() -> None:
    port = _closed_port()
    code, out = invoke("doctor", "--url", f"mongodb://127.0.0.1:{port},[::1]:{port}/x")
    assert code == 1
    failed = [line for line in lines_of(out) if line.startswith("FAIL")]
    assert len(failed) == 1
    assert f"cannot connect to 127.0.0.1:{port} (" in failed[0]
    assert f", [::1]:{port} (" in failed[0]


def test_doctor_on_a_malformed_host_list_is_one_line() -> None:
    code, out = invoke("doctor", "--url", "mongodb://u:Zq7-S3cret@h1,[::1/x")
    assert code == 1
    assert lines_of(out)[-1].startswith("error: malformed URL 'mongodb://u:***@h1,[::1/x'")
    assert "Zq7-S3cret" not in out


def test_doctor_names_only_the_drivers_the_url_uses() -> None:
    assert drivers_for("postgresql+psycopg://h/db") == ["sqlalchemy", "psycopg"]
    assert drivers_for("postgresql://h/db") == ["sqlalchemy", "psycopg"]
    assert drivers_for("mysql+pymysql://h/db") == ["sqlalchemy", "pymysql"]
    assert drivers_for("sqlite:///x.db") == ["sqlalchemy"]
    assert drivers_for("cassandra://h/ks") == ["cassandra-driver"]
    assert drivers_for("bolt://h") == ["neo4j"]
    assert drivers_for("memory://") == []


def test_doctor_on_sqlite_reports_every_check(db: str) -> None:
    code, out = invoke("doctor", "--url", db)
    assert code == 0, out
    names = [line.split()[1] for line in lines_of(out) if line.startswith(("ok", "FAIL"))]
    assert names == ["versions", "reachable", "server", "schema", "encryption", "latency"]
    assert "aiosqlite" not in out
    assert "encryption off" in " ".join(out.split())


def test_doctor_shows_encryption_and_its_current_key(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATMEM_ENCRYPTION_KEYS", f"2026-12:{generate_key()}")
    separator = "&" if "?" in db else "?"
    code, out = invoke("doctor", "--url", f"{db}{separator}encryption=env")
    assert code == 0, out
    assert "encryption on, new data keys wrapped by '2026-12'" in " ".join(out.split())


def test_doctor_on_sqlite_in_a_missing_directory(tmp_path: Path) -> None:
    code, out = invoke("doctor", "--url", f"sqlite:///{tmp_path / 'nowhere' / 'chat.db'}")
    assert code == 1
    assert lines_of(out)[-1] == (
        f"FAIL reachable  the directory {tmp_path / 'nowhere'} does not exist: create it, or "
        "give another path for the SQLite file"
    )


SERVER_PRODUCTS = {
    "postgresql": "PostgreSQL ",
    "mariadb": "MariaDB ",
    "redis": "Redis ",
    "mongodb": "MongoDB ",
    "cassandra": "Cassandra ",
    "neo4j": "Neo4j ",
}


@pytest.mark.parametrize("name", sorted(SERVER_PRODUCTS))
def test_doctor_reports_the_server_version(name: str) -> None:
    url = server_url(name)
    if name in ("postgresql", "mariadb"):
        url += ("&" if "?" in url else "?") + "initialize_schema=always"
    code, out = invoke("doctor", "--url", url, "--no-write")
    assert code == 0, out
    server = next(line for line in lines_of(out) if line.split()[1] == "server")
    assert SERVER_PRODUCTS[name] in server
    assert "not reported" not in server


@pytest.mark.parametrize("name", ["postgresql", "mariadb"])
def test_doctor_names_a_missing_table_plainly(name: str) -> None:
    url = server_url(name)
    separator = "&" if "?" in url else "?"
    # A table prefix no test uses: the server answers, the tables are not there.
    code, out = invoke("doctor", "--url", f"{url}{separator}table_prefix=doctor_absent_")
    assert code == 1
    schema = next(line for line in lines_of(out) if " schema " in line)
    assert "the chatmem tables are missing" in schema
    assert "initialize_schema=always" in schema
    assert "Error" not in schema


# -- missing extras ----------------------------------------------------------------------------


def _run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    # A None entry in sys.modules makes importing that module fail as if it were not installed.
    program = f"import sys; sys.modules[{module!r}] = None\n{code}"
    return subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


def test_the_command_without_its_extra_names_the_install_line() -> None:
    result = _run_without("typer", "from chatmem_cli import main; main()")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: the chatmem command needs its extra (typer is not installed): "
        'pip install "chatmem[cli]"'
    )


@pytest.mark.parametrize("name", ["OpenAIChatModel", "OpenAIEmbeddingModel"])
def test_openai_without_its_extra_names_the_install_line(name: str) -> None:
    result = _run_without("openai", f"from chatmem.openai import {name}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        'ModuleNotFoundError: chatmem.openai needs the OpenAI SDK: pip install "chatmem[openai]"'
    )


def test_settings_without_their_extra_name_the_install_line() -> None:
    result = _run_without(
        "pydantic_settings", "from chatmem_repositories import ChatMemorySettings"
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: chatmem_repositories.settings needs pydantic-settings: "
        'pip install "chatmem[settings]"'
    )

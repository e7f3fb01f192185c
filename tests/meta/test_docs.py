"""Every ```python block of README.md and docs/ runs as written, with pytest-examples.

A block is a complete program: what a user copies is what runs. Each runs in a fresh temporary
working directory (so ``sqlite:///chat.db`` lands there), with:

- ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` pointing at a local
  :class:`chatmem.testing.OpenAITestServer` (chat completions, the Responses API, whose
  answers carry a reasoning item, and embeddings), so blocks that call a model need no
  network and no key;
- ``CHATMEM_TEST_<NAME>_URL`` set for every server a block names; a block whose server is not
  reachable is skipped with the reason (a failure in CI), as the backend tests are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

from chatmem.testing import OpenAITestServer, ScriptedCompletion, ScriptedResponse
from chatmem.testing.openai_embeddings import add_embeddings_route
from chatmem.testing.responses_protocol import message_item, reasoning_item
from tests.support.servers import DEFAULT_URLS, server_url

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [
    example
    for example in find_examples(str(ROOT / "README.md"), str(ROOT / "docs"))
    if example.prefix in ("python", "py")
]
SERVER_VARIABLE = re.compile(r"CHATMEM_TEST_([A-Z0-9_]+?)_URL")


def _example_id(example: CodeExample) -> str:
    return f"{example.path.relative_to(ROOT)}:{example.start_line}"


def _answer(body: dict[str, Any]) -> ScriptedCompletion:
    """Answer from what the model was sent, so a remembered fact shows in the reply."""
    said = [
        str(message.get("content") or "")
        for message in body.get("messages", [])
        if message.get("role") == "user"
    ]
    remembered = "; ".join(said[:-1]) or "nothing yet"
    return ScriptedCompletion(
        text=f"(test model) You said: {said[-1] if said else ''}. Earlier: {remembered}."
    )


def _answer_response(body: dict[str, Any]) -> ScriptedResponse:
    """A Responses API answer: a reasoning item, then the echo of what the model was sent."""
    items = body.get("input")
    messages = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
    said = [
        str(item.get("content") or "")
        for item in messages
        if item.get("role") == "user" and item.get("type", "message") == "message"
    ]
    remembered = "; ".join(said[:-1]) or "nothing yet"
    text = f"(test model) You said: {said[-1] if said else ''}. Earlier: {remembered}."
    return ScriptedResponse([reasoning_item("Recall the conversation."), message_item(text)])


@pytest.fixture(scope="module")
def model_server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as server:
        add_embeddings_route(server)
        server.respond = _answer
        server.respond_response = _answer_response
        yield server


def test_every_python_block_is_collected() -> None:
    # A block the finder misses (indented, an odd fence) would silently never run.
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    fences = sum(
        len(re.findall(r"^[ \t]*```(?:python|py)[ \t]*$", f.read_text("utf-8"), re.MULTILINE))
        for f in files
    )
    assert len(EXAMPLES) == fences
    assert any(example.path.name == "README.md" for example in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=_example_id)
def test_docs_example_runs(
    example: CodeExample,
    eval_example: EvalExample,
    model_server: OpenAITestServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    for variable in ("CHATMEM_REPOSITORY_URL", "CHATMEM_MAX_MESSAGES", "CHATMEM_TTL"):
        monkeypatch.delenv(variable, raising=False)
    for name in sorted(set(SERVER_VARIABLE.findall(example.source))):
        if name.lower() not in DEFAULT_URLS:
            pytest.fail(f"{_example_id(example)} names an unknown test server {name}")
        monkeypatch.setenv(f"CHATMEM_TEST_{name}_URL", server_url(name.lower()))
    environment = dict(os.environ)  # a block may set variables itself, as a user's program does
    try:
        eval_example.run(example, module_globals={"__name__": "__main__"})
    except Exception as exc:
        # pytest-examples maps the traceback onto the markdown file with code objects that
        # Python 3.11's traceback printer cannot read (an INTERNALERROR hides the failure), so
        # report the block's own failing line and the error instead.
        line = _line_in(exc, example)
        raise AssertionError(f"{example.path.name}:{line}: {type(exc).__name__}: {exc}") from None
    finally:
        os.environ.clear()
        os.environ.update(environment)


def _line_in(exc: BaseException, example: CodeExample) -> int:
    found = example.start_line
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(example.path):
            found = tb.tb_lineno
        tb = tb.tb_next
    return found

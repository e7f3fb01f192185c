"""A local HTTP server that speaks Anthropic's Messages API, for tests.

It answers from a per-test script (text, thinking, tool use, any other block, HTTP errors in
Anthropic's error shape, an ``error`` event mid-stream, a stream cut short), serves plain JSON
and SSE streams with Anthropic's event types, records every request with its headers, and
refuses requests the way the real API does (HTTP 400, ``invalid_request_error``): a
``tool_use`` without its ``tool_result``, a thinking block whose signature the server did not
issue (signatures are checked byte for byte), a tool loop with thinking on whose last
assistant turn does not start with its thinking.

It keeps a prompt cache as the API does: the prefix up to each ``cache_control`` breakpoint
is written on first sight and read on the next request that starts with it; the usage reports
``cache_creation_input_tokens`` and ``cache_read_input_tokens`` (a token is four characters
of the request's JSON, roughly).

Example:
    ```python
    with AnthropicTestServer() as server:
        server.reply(ScriptedMessage.text("Hello, Mr Bond.", thinking="A greeting."))
        model = AnthropicChatModel(base_url=server.base_url, api_key="test")
        ...
        server.message_requests[0]["messages"]
    ```
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["AnthropicRequest", "AnthropicTestServer", "ScriptedMessage"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ScriptedMessage:
    """One scripted answer of the Messages route.

    ``blocks`` are content blocks as the API returns them. A ``thinking`` block without a
    ``signature`` gets one the server signs (and checks when it comes back); a
    ``redacted_thinking`` block without ``data`` gets opaque data the server issued.
    """

    blocks: Sequence[Mapping[str, Any]] = ()
    """The answer's content blocks, in order."""
    stop_reason: str | None = None
    """The stop reason; by default ``tool_use`` if a block is one, else ``end_turn``."""
    output_tokens: int = 5
    """Output tokens reported."""
    status: int = 200
    """An HTTP error status to answer with instead (Anthropic's error body)."""
    error_message: str = "scripted error"
    """The error message of an error answer."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    fail_after_events: int | None = None
    """In a stream, send an ``error`` event (``overloaded_error``) after that many events."""
    truncate_after: int | None = None
    """In a stream, end the response after that many events, as a dropped connection would:
    no ``message_delta`` and no ``message_stop``."""

    @classmethod
    def text(cls, text: str, *, thinking: str | None = None) -> ScriptedMessage:
        """An answer with text, after some thinking if given.

        Args:
            text: The answer.
            thinking: The thinking before it.
        """
        blocks: list[Mapping[str, Any]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking})
        blocks.append({"type": "text", "text": text})
        return cls(blocks)

    @classmethod
    def tool_use(
        cls,
        *calls: tuple[str, str, Mapping[str, Any]],
        thinking: str | None = None,
        text: str | None = None,
    ) -> ScriptedMessage:
        """An answer that calls tools: ``(id, name, input)`` per call.

        Args:
            *calls: The calls.
            thinking: Thinking before them.
            text: Text before them.
        """
        blocks: list[Mapping[str, Any]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking})
        if text is not None:
            blocks.append({"type": "text", "text": text})
        blocks.extend(
            {"type": "tool_use", "id": i, "name": n, "input": dict(a)} for i, n, a in calls
        )
        return cls(blocks)


@dataclass
class AnthropicRequest:
    """A request the server received."""

    path: str
    """The request path."""
    body: dict[str, Any]
    """The JSON body."""
    headers: dict[str, str] = field(default_factory=dict)
    """The request headers, names in lower case."""
    accepted: bool = True
    """False if the server refused it as invalid."""
    error: str | None = None
    """Why it was refused."""


@dataclass
class _Reply:
    status: int = 200
    body: dict[str, Any] | None = None
    events: Iterator[tuple[str, dict[str, Any]]] | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, message: str) -> _Reply:
    kind = _ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message}}
    headers = {"retry-after": "0"} if status in (429, 529) else {}
    return _Reply(status=status, body=body, headers=headers)


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _check_fields(body: Mapping[str, Any]) -> str | None:
    if not body.get("model"):
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    budget = (body.get("thinking") or {}).get("budget_tokens", 0)
    if budget >= body["max_tokens"]:
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    return None


def _check_results(index: int, blocks: list[dict[str, Any]], open_ids: list[str]) -> str | None:
    answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
    missing = [i for i in open_ids if i not in answered]
    if missing:
        return (
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )
    stray = answered - set(open_ids)
    if stray:
        return (
            f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` "
            f"blocks: {', '.join(sorted(map(str, stray)))}"
        )
    return None


def _tokens(value: object) -> int:
    return max(1, len(json.dumps(value, sort_keys=True)) // 4)


def _uncached(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


class _PromptCache:
    """Prefixes written at breakpoints, by hash: what a later request may read."""

    def __init__(self) -> None:
        self._written: set[str] = set()

    def account(self, body: Mapping[str, Any]) -> tuple[int, int, int]:
        """Return (uncached input, cache read, cache write) tokens of a request."""
        # The request as the cache sees it: tools, system blocks, then message blocks.
        units: list[tuple[object, bool]] = [
            (t, "cache_control" in t) for t in body.get("tools") or []
        ]
        system = body.get("system")
        if isinstance(system, str):
            units.append((system, False))
        elif isinstance(system, list):
            units.extend((_uncached(b), "cache_control" in b) for b in system)
        for message in body.get("messages") or []:
            for block in _blocks(message):
                units.append(((message.get("role"), _uncached(block)), "cache_control" in block))
        digest = hashlib.sha256()
        hashes: list[str] = []
        sizes: list[int] = []
        total = 0
        for unit, _ in units:
            digest.update(json.dumps(unit, sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
            total += _tokens(unit)
            sizes.append(total)
        read = max((i + 1 for i, h in enumerate(hashes) if h in self._written), default=0)
        breakpoints = [i + 1 for i, (_, marked) in enumerate(units) if marked]
        last = max(breakpoints, default=0)
        for end in breakpoints:
            self._written.add(hashes[end - 1])
        read_tokens = sizes[read - 1] if read else 0
        write_tokens = sizes[last - 1] - read_tokens if last > read else 0
        return total - read_tokens - write_tokens, read_tokens, write_tokens


class AnthropicTestServer:
    """A Messages API server on 127.0.0.1 and a free port, answering from a script.

    Example:
        ```python
        with AnthropicTestServer() as server:
            server.reply(ScriptedMessage.text("Hello"))
            AnthropicChatModel(base_url=server.base_url, api_key="test")
        ```

    Args:
        host: The address to listen on (loopback by default).
        port: The port; 0 picks a free one.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._lock = threading.Lock()
        self._script: deque[ScriptedMessage] = deque()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._secret = b"chatmem-test-server"
        self._redacted: set[str] = set()
        self._cache = _PromptCache()
        self._count = 0
        self.requests: list[AnthropicRequest] = []
        """Every request received, in order."""
        self.responses: list[dict[str, Any]] = []
        """Every message answered (whole, also when it was streamed or cut short), in order:
        what the client must send back."""
        self.respond: Callable[[dict[str, Any]], ScriptedMessage] | None = None
        """Answers requests once the script is used up."""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> AnthropicTestServer:
        """Start serving in a background thread."""
        server = _Server((self.host, self._port), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> AnthropicTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port being served."""
        assert self._server is not None, "the server is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an Anthropic client (the SDK adds ``/v1/messages``)."""
        return f"http://{self.host}:{self.port}"

    # -- script ------------------------------------------------------------------------------

    def reply(self, *messages: ScriptedMessage) -> None:
        """Queue scripted answers.

        Args:
            *messages: The answers, in order.
        """
        with self._lock:
            self._script.extend(messages)

    def reply_text(self, *texts: str, thinking: str | None = None) -> None:
        """Queue text answers.

        Args:
            *texts: The answers.
            thinking: Thinking before each.
        """
        self.reply(*(ScriptedMessage.text(t, thinking=thinking) for t in texts))

    def reply_error(self, status: int, message: str = "scripted error") -> None:
        """Queue an HTTP error answer (429 and 529 say ``retry-after: 0``).

        Args:
            status: The status code, such as 400, 429 or 529.
            message: The error message.
        """
        self.reply(ScriptedMessage(status=status, error_message=message))

    def sign(self, thinking: str) -> str:
        """The signature the server gives a thinking block (and expects back).

        Args:
            thinking: The thinking text.
        """
        mac = hmac.new(self._secret, thinking.encode(), hashlib.sha256).digest()
        return base64.b64encode(mac).decode("ascii")

    def _next(self, body: dict[str, Any]) -> ScriptedMessage | None:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.respond(body) if self.respond is not None else None

    # -- records -----------------------------------------------------------------------------

    def _record(self, request: AnthropicRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def message_requests(self) -> list[dict[str, Any]]:
        """Bodies of the Messages requests received (refused ones too)."""
        with self._lock:
            return [r.body for r in self.requests if r.path == "/v1/messages"]

    @property
    def rejected(self) -> list[AnthropicRequest]:
        """Requests the server refused as invalid."""
        with self._lock:
            return [r for r in self.requests if not r.accepted]

    # -- the protocol ------------------------------------------------------------------------

    def validate(self, body: Mapping[str, Any]) -> str | None:
        """Check a Messages request the way the API does.

        Args:
            body: The request body.

        Returns:
            ``None`` if it is valid, else the error message the API would give.
        """
        problem = _check_fields(body)
        if problem:
            return problem
        messages = body["messages"]
        thinking = (body.get("thinking") or {}).get("type") == "enabled"
        open_ids: list[str] = []
        for index, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                return f"messages.{index}.role: Input should be 'user' or 'assistant'"
            blocks = _blocks(message)
            if role == "user":
                problem = _check_results(index, blocks, open_ids)
                if problem:
                    return problem
                open_ids = []
                continue
            if open_ids:
                return f"messages.{index}: `tool_use` ids were found without `tool_result` blocks"
            problem = self._check_thinking(index, blocks)
            if problem:
                return problem
            open_ids = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            last_tool_turn = open_ids and index == len(messages) - 2
            if (
                thinking
                and last_tool_turn
                and blocks[0].get("type")
                not in (
                    "thinking",
                    "redacted_thinking",
                )
            ):
                return (
                    f"messages.{index}.content.0.type: Expected `thinking` or "
                    f"`redacted_thinking`, but found `{blocks[0].get('type')}`. When `thinking` "
                    "is enabled, a final `assistant` message must start with a thinking block."
                )
        if open_ids:
            return "the last message holds `tool_use` blocks without their `tool_result`"
        return None

    def _check_thinking(self, index: int, blocks: list[dict[str, Any]]) -> str | None:
        for position, block in enumerate(blocks):
            where = f"messages.{index}.content.{position}"
            if block.get("type") == "thinking":
                if block.get("signature") != self.sign(str(block.get("thinking", ""))):
                    return f"{where}: Invalid `signature` in `thinking` block"
            elif (
                block.get("type") == "redacted_thinking" and block.get("data") not in self._redacted
            ):
                return f"{where}: Invalid `data` in `redacted_thinking` block"
        return None

    def _complete(self, script: ScriptedMessage) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        for block in script.blocks:
            block = dict(block)
            if block.get("type") == "thinking" and "signature" not in block:
                block["signature"] = self.sign(str(block.get("thinking", "")))
            if block.get("type") == "redacted_thinking" and "data" not in block:
                with self._lock:
                    self._count += 1
                    data = base64.b64encode(f"redacted-{self._count}".encode()).decode()
                    self._redacted.add(data)
                block["data"] = data
            blocks.append(block)
        return blocks

    def answer(self, body: dict[str, Any]) -> _Reply:
        """Build the reply to a Messages request (validated first)."""
        problem = self.validate(body)
        if problem:
            return _error(400, problem)
        script = self._next(body)
        if script is None:
            return _error(500, "the test server has no scripted reply left")
        if script.status != 200:
            reply = _error(script.status, script.error_message)
            reply.delay = script.delay
            return reply
        uncached, read, written = self._cache.account(body)
        blocks = self._complete(script)
        stop = script.stop_reason or (
            "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        )
        with self._lock:
            self._count += 1
            number = self._count
        message = {
            "id": f"msg_test_{number}",
            "type": "message",
            "role": "assistant",
            "model": str(body["model"]),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": uncached,
                "output_tokens": script.output_tokens,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read,
            },
        }
        with self._lock:
            self.responses.append(message)
        if body.get("stream"):
            events = _stream_events(message, script)
            return _Reply(events=events, delay=script.delay)
        return _Reply(body=message, delay=script.delay)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block.get("type")
    start = dict(block)
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start["text"] = ""
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], 8)]
    elif kind == "thinking":
        start.update(thinking="", signature="")
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], 8)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in ("tool_use", "server_tool_use"):
        start["input"] = {}
        arguments = json.dumps(block.get("input", {}))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, 7)]
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _whole_stream(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": delta,
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _stream_events(
    message: dict[str, Any], script: ScriptedMessage
) -> Iterator[tuple[str, dict[str, Any]]]:
    for sent, event in enumerate(_whole_stream(message)):
        if sent == script.truncate_after:
            return
        if sent == script.fail_after_events:
            error = {"type": "overloaded_error", "message": "Overloaded"}
            yield "error", {"type": "error", "error": error}
            return
        yield event


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Small responses on a kept-alive connection otherwise wait out Nagle's delay (~40 ms).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # tests read server.requests, not stderr

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if path != "/v1/messages":
            reply = _error(404, f"no route for POST {path}")
        elif not isinstance(body, dict):
            reply = _error(400, "the body must be a JSON object")
        else:
            reply = owner.answer(body)
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = AnthropicRequest(path, body if isinstance(body, dict) else {}, headers)
        if reply.status == 400:
            record.accepted = False
            record.error = str((reply.body or {}).get("error", {}).get("message"))
        owner._record(record)
        if reply.delay:
            time.sleep(reply.delay)
        try:
            if reply.events is not None:
                self._send_events(reply)
            else:
                self._send_json(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a timeout or a cancelled stream)

    def _send_json(self, reply: _Reply) -> None:
        data = json.dumps(reply.body or {}).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_test")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, reply: _Reply) -> None:
        assert reply.events is not None
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in reply.events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: AnthropicTestServer

"""A local HTTP server that speaks OpenAI's Chat Completions and Responses protocols, for tests.

It answers from a per-test script (text, tool calls, HTTP errors, errors mid-stream, delays),
serves both plain JSON and SSE streams, records every request, and rejects message sequences
the way the real API does (HTTP 400 with an OpenAI-style error body).

Example:
    ```python
    with OpenAITestServer() as server:
        server.reply_text("Hello, Mr Bond.")
        model = OpenAIChatModel(base_url=server.base_url, api_key="test")
        ...
        server.requests[0].body["messages"]
    ```

The Responses API (``POST /v1/responses``) answers from its own script
(:meth:`OpenAITestServer.reply_response`, see :mod:`chatmem.testing.responses_protocol`).

Routes live in a table (``server.routes[("POST", "/v1/chat/completions")]``), so more
endpoints can be added with :meth:`OpenAITestServer.add_route`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chatmem.testing.responses_protocol import (
    ScriptedResponse,
    response_body,
    response_events,
    validate_responses_input,
)

__all__ = [
    "OpenAITestServer",
    "RecordedRequest",
    "RouteHandler",
    "ScriptedCompletion",
    "ServerReply",
    "validate_chat_messages",
]

_ROLES = {"system", "developer", "user", "assistant", "tool"}


@dataclass(frozen=True)
class ScriptedCompletion:
    """One scripted answer of the chat completions route."""

    text: str | None = None
    """The answer text."""
    tool_calls: Sequence[tuple[str, str, str]] = ()
    """Tool calls as ``(id, name, arguments JSON)``."""
    status: int = 200
    """An HTTP error status to answer with instead (with ``error_message``)."""
    error_message: str = "scripted error"
    """The error message of an error answer."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    chunk_delay: float = 0.0
    """Seconds to wait between streamed chunks."""
    fail_after_chunks: int | None = None
    """In a stream, send an error event after that many content chunks."""
    truncate_after: int | None = None
    """In a stream, end the response after that many chunks (the opening role chunk counts),
    as a dropped connection or a crashed server would: no chunk with a finish reason, no usage
    chunk and no ``[DONE]``. Tool-call arguments come 7 characters per chunk."""
    usage: tuple[int, int] = (10, 5)
    """Prompt and completion tokens reported."""


@dataclass
class RecordedRequest:
    """A request the server received."""

    method: str
    """The HTTP method."""
    path: str
    """The request path."""
    body: dict[str, Any]
    """The JSON body."""
    accepted: bool = True
    """False if the server rejected it (validation failed)."""
    error: str | None = None
    """Why it was rejected."""


@dataclass
class ServerReply:
    """What a route handler returns: a JSON body, or SSE events."""

    status: int = 200
    """The HTTP status."""
    body: dict[str, Any] | None = None
    """The JSON body (for a non-streamed reply)."""
    events: Iterator[dict[str, Any] | str] | None = None
    """SSE ``data`` payloads; the string ``"[DONE]"`` ends a stream."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    chunk_delay: float = 0.0
    """Seconds to wait between events."""


RouteHandler = Callable[["OpenAITestServer", dict[str, Any]], ServerReply]
"""A route: takes the server and the JSON body, returns the reply."""


def _error(status: int, message: str, kind: str = "invalid_request_error") -> ServerReply:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return ServerReply(status=status, body=body)


def _check_tool_run(messages: Sequence[Any], index: int, ids: list[str]) -> str | None:
    answered: set[str] = set()
    position = index + 1
    while position < len(messages) and messages[position].get("role") == "tool":
        answered.add(str(messages[position].get("tool_call_id")))
        position += 1
    missing = [i for i in ids if i not in answered]
    if missing:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(missing)}"
        )
    return None


def validate_chat_messages(messages: object) -> str | None:
    """Check a ``messages`` array the way the Chat Completions API does.

    Args:
        messages: The request's ``messages`` value.

    Returns:
        ``None`` if it is valid, else the error message the API would give.
    """
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    open_ids: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            return f"Invalid value for 'messages[{index}].role': {role!r}"
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' (tool_call_id {call_id!r})."
                )
            continue
        open_ids = set()
        if role == "assistant" and message.get("tool_calls"):
            ids = [str(call.get("id")) for call in message["tool_calls"]]
            problem = _check_tool_run(messages, index, ids)
            if problem:
                return problem
            open_ids = set(ids)
        elif message.get("content") is None:
            return f"Invalid value for 'messages[{index}].content': expected a string or array"
    return None


def _completion_body(script: ScriptedCompletion, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": script.text}
    if script.tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in script.tool_calls
        ]
    prompt, completion = script.usage
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if script.tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def _stream_events(
    script: ScriptedCompletion, model: str, include_usage: bool
) -> Iterator[dict[str, Any] | str]:
    events = _whole_stream(script, model, include_usage)
    if script.truncate_after is None:
        return events
    return _truncated(events, script.truncate_after)


def _truncated(
    events: Iterator[dict[str, Any] | str], count: int
) -> Iterator[dict[str, Any] | str]:
    for sent, event in enumerate(events):
        ends_answer = event == "[DONE]" or (
            isinstance(event, dict)
            and (
                event.get("usage") is not None
                or any(c.get("finish_reason") for c in event.get("choices", []))
            )
        )
        if sent == count or ends_answer:
            return
        yield event


def _whole_stream(
    script: ScriptedCompletion, model: str, include_usage: bool
) -> Iterator[dict[str, Any] | str]:
    yield _chunk(model, {"role": "assistant", "content": ""})
    words = (script.text or "").split(" ")
    for index, word in enumerate(words if script.text else []):
        if script.fail_after_chunks is not None and index == script.fail_after_chunks:
            yield {"error": {"message": "scripted failure mid-stream", "type": "server_error"}}
            return
        yield _chunk(model, {"content": word if index == 0 else " " + word})
    for position, (call_id, name, arguments) in enumerate(script.tool_calls):
        head = {"index": position, "id": call_id, "type": "function"}
        head["function"] = {"name": name, "arguments": ""}
        yield _chunk(model, {"tool_calls": [head]})
        for start in range(0, len(arguments), 7):
            piece = {"index": position, "function": {"arguments": arguments[start : start + 7]}}
            yield _chunk(model, {"tool_calls": [piece]})
    yield _chunk(model, {}, "tool_calls" if script.tool_calls else "stop")
    if include_usage:
        prompt, completion = script.usage
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        yield {**_chunk(model, {}), "choices": [], "usage": usage}
    yield "[DONE]"


def _chat_completions(server: OpenAITestServer, body: dict[str, Any]) -> ServerReply:
    if not body.get("model"):
        return _error(400, "you must provide a model parameter")
    problem = validate_chat_messages(body.get("messages"))
    if problem:
        return _error(400, problem)
    script = server.next_completion(body)
    if script is None:
        return _error(500, "the test server has no scripted reply left", "server_error")
    if script.status != 200:
        kind = "invalid_request_error" if script.status < 500 else "server_error"
        reply = _error(script.status, script.error_message, kind)
        reply.delay = script.delay
        return reply
    model = str(body["model"])
    if body.get("stream"):
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = _stream_events(script, model, include_usage)
        return ServerReply(events=events, delay=script.delay, chunk_delay=script.chunk_delay)
    return ServerReply(body=_completion_body(script, model), delay=script.delay)


def _responses(server: OpenAITestServer, body: dict[str, Any]) -> ServerReply:
    if not body.get("model"):
        return _error(400, "you must provide a model parameter")
    store = bool(body.get("store", True))
    problem = validate_responses_input(body.get("input"), store=store, issued=server.issued)
    if problem:
        return _error(400, problem)
    script = server.next_response(body)
    if script is None:
        return _error(500, "the test server has no scripted response left", "server_error")
    if script.status != 200:
        kind = "invalid_request_error" if script.status < 500 else "server_error"
        reply = _error(script.status, script.error_message, kind)
        reply.delay = script.delay
        return reply
    server.issue(script)
    response_id = f"resp_{len(server.responses_requests):04d}"
    if body.get("stream"):
        events = response_events(script, body, response_id)
        return ServerReply(events=events, delay=script.delay, chunk_delay=script.chunk_delay)
    return ServerReply(body=response_body(script, body, response_id), delay=script.delay)


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
            body = {}
        handler = owner.routes.get(("POST", path))
        if handler is None:
            reply = _error(404, f"no route for POST {path}")
        elif not isinstance(body, dict):
            reply = _error(400, "the body must be a JSON object")
        else:
            reply = handler(owner, body)
        record = RecordedRequest("POST", path, body if isinstance(body, dict) else {})
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
                self._send_json(reply.status, reply.body or {})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a timeout or a cancelled stream)

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, reply: ServerReply) -> None:
        assert reply.events is not None
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in reply.events:
            payload = event if isinstance(event, str) else json.dumps(event)
            # Responses API events are named (``event: response.completed``) as well as typed.
            named = (
                f"event: {event['type']}\n" if isinstance(event, dict) and "type" in event else ""
            )
            self.wfile.write(f"{named}data: {payload}\n\n".encode())
            self.wfile.flush()
            if reply.chunk_delay:
                time.sleep(reply.chunk_delay)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenAITestServer


class OpenAITestServer:
    """An OpenAI server on 127.0.0.1 and a free port, answering from a script.

    It serves Chat Completions (``/v1/chat/completions``) and the Responses API
    (``/v1/responses``), each from its own script.

    Example:
        ```python
        with OpenAITestServer() as server:
            server.reply_text("Hello")
            OpenAIChatModel(base_url=server.base_url, api_key="test")
        ```

    Args:
        host: The address to listen on (loopback by default).
        port: The port; 0 picks a free one.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._lock = threading.Lock()
        self._script: deque[ScriptedCompletion] = deque()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[RecordedRequest] = []
        """Every request received, in order."""
        self.routes: dict[tuple[str, str], RouteHandler] = {
            ("POST", "/v1/chat/completions"): _chat_completions,
            ("POST", "/v1/responses"): _responses,
        }
        """Route table: ``(method, path) -> handler``."""
        self.respond: Callable[[dict[str, Any]], ScriptedCompletion] | None = None
        """Answers chat requests once the script is used up."""
        self._responses: deque[ScriptedResponse] = deque()
        self.respond_response: Callable[[dict[str, Any]], ScriptedResponse] | None = None
        """Answers Responses API requests once their script is used up."""
        self.issued: dict[str, str] = {}
        """Encrypted reasoning this server handed out -> its reasoning item's id: a request
        may send back only these, byte for byte."""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> OpenAITestServer:
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

    def __enter__(self) -> OpenAITestServer:
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
        """The ``base_url`` to give an OpenAI client (ends with ``/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    # -- script ------------------------------------------------------------------------------

    def add_route(self, method: str, path: str, handler: RouteHandler) -> None:
        """Serve another endpoint.

        Args:
            method: The HTTP method, such as ``POST``.
            path: The path, such as ``/v1/embeddings``.
            handler: Builds the reply from the JSON body.
        """
        self.routes[(method.upper(), path)] = handler

    def reply(self, *completions: ScriptedCompletion) -> None:
        """Queue scripted answers.

        Args:
            *completions: The answers, in order.
        """
        with self._lock:
            self._script.extend(completions)

    def reply_text(self, *texts: str, **options: Any) -> None:
        """Queue text answers.

        Args:
            *texts: The answers.
            **options: Other :class:`ScriptedCompletion` fields.
        """
        self.reply(*(ScriptedCompletion(text=t, **options) for t in texts))

    def reply_tool_calls(self, *calls: tuple[str, str, str], text: str | None = None) -> None:
        """Queue an answer that calls tools.

        Args:
            *calls: ``(id, name, arguments JSON)`` per call.
            text: Optional text alongside the calls.
        """
        self.reply(ScriptedCompletion(text=text, tool_calls=calls))

    def reply_error(self, status: int, message: str = "scripted error") -> None:
        """Queue an HTTP error answer.

        Args:
            status: The status code.
            message: The error message.
        """
        self.reply(ScriptedCompletion(status=status, error_message=message))

    def next_completion(self, body: dict[str, Any]) -> ScriptedCompletion | None:
        """Take the next scripted answer (or ask :attr:`respond`).

        Args:
            body: The request body.
        """
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.respond(body) if self.respond is not None else None

    def reply_response(self, *responses: ScriptedResponse) -> None:
        """Queue scripted answers of the Responses API route.

        Args:
            *responses: The answers, in order.
        """
        with self._lock:
            self._responses.extend(responses)

    def next_response(self, body: dict[str, Any]) -> ScriptedResponse | None:
        """Take the next scripted Responses API answer (or ask :attr:`respond_response`).

        Args:
            body: The request body.
        """
        with self._lock:
            if self._responses:
                return self._responses.popleft()
        return self.respond_response(body) if self.respond_response is not None else None

    def issue(self, script: ScriptedResponse) -> None:
        """Remember the encrypted reasoning a scripted answer hands out.

        Args:
            script: The answer about to be sent.
        """
        with self._lock:
            for item in script.output:
                if item.get("type") == "reasoning" and item.get("encrypted_content"):
                    self.issued[str(item["encrypted_content"])] = str(item.get("id"))

    # -- records -----------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completion requests received."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def responses_requests(self) -> list[dict[str, Any]]:
        """Bodies of the Responses API requests received."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/responses")]

    @property
    def rejected(self) -> list[RecordedRequest]:
        """Requests the server rejected as invalid."""
        with self._lock:
            return [r for r in self.requests if not r.accepted]

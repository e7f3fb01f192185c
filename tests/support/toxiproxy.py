"""A small client for Toxiproxy's HTTP API (https://github.com/Shopify/toxiproxy).

Toxiproxy is a TCP proxy whose faults ("toxics") are switched on and off over HTTP:
latency, a connection reset, a blackhole that holds every byte, a cut. The tests put one
proxy between a repository and a test server and inject faults while the repository works.
Standard library only (``http.client``), so no HTTP proxy setting of the environment can get
in the way of talking to 127.0.0.1.

Example::

    api = Toxiproxy("http://127.0.0.1:8474")
    proxy = api.create("pg", upstream="127.0.0.1:25432")
    with proxy.toxic("latency", latency=100):
        ...  # every reply now comes 100 ms late
"""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit


class ToxiproxyError(RuntimeError):
    """The Toxiproxy API answered with an error status."""


class Toxiproxy:
    """The Toxiproxy server's API: create and delete proxies."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 8474

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one API request and return its decoded JSON answer (``None`` if empty)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            payload = None if body is None else json.dumps(body)
            headers = {} if body is None else {"Content-Type": "application/json"}
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        if response.status >= 300:
            raise ToxiproxyError(f"{method} {path}: {response.status} {data.decode()}")
        return json.loads(data) if data.strip() else None

    def create(self, name: str, upstream: str, listen: str = "127.0.0.1:0") -> Proxy:
        """Create a proxy (replacing one of the same name) and return it.

        Args:
            name: The proxy's name, unique on the server.
            upstream: ``host:port`` of the server to forward to.
            listen: ``host:port`` to listen on; port 0 picks a free one.
        """
        with contextlib.suppress(ToxiproxyError):
            self.request("DELETE", f"/proxies/{name}")
        made = self.request(
            "POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream}
        )
        host, _, port = made["listen"].rpartition(":")
        return Proxy(self, name, host, int(port))


class Proxy:
    """One proxy: its listening address, and its toxics.

    Attributes:
        host: Where the proxy listens.
        port: The proxy's port (clients connect here instead of to the server).
    """

    def __init__(self, api: Toxiproxy, name: str, host: str, port: int) -> None:
        self._api = api
        self.name = name
        self.host = host
        self.port = port

    @property
    def address(self) -> str:
        """``host:port`` to connect to."""
        return f"{self.host}:{self.port}"

    def add_toxic(
        self, kind: str, *, stream: str = "downstream", toxicity: float = 1.0, **attributes: Any
    ) -> str:
        """Add a toxic and return its name.

        Args:
            kind: ``latency``, ``timeout`` (``timeout=0`` holds every byte forever: a
                blackhole), ``reset_peer``, ``bandwidth``, ``slow_close``, ``slicer`` or
                ``limit_data``.
            stream: ``downstream`` (server to client) or ``upstream`` (client to server).
            toxicity: The share of connections it applies to.
            **attributes: The toxic's attributes, such as ``latency=100``.
        """
        name = f"{kind}_{stream}"
        self._api.request(
            "POST",
            f"/proxies/{self.name}/toxics",
            {
                "name": name,
                "type": kind,
                "stream": stream,
                "toxicity": toxicity,
                "attributes": attributes,
            },
        )
        return name

    def remove_toxic(self, name: str) -> None:
        """Remove a toxic by name."""
        self._api.request("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def remove_all_toxics(self) -> None:
        """Remove every toxic of this proxy."""
        for toxic in self._api.request("GET", f"/proxies/{self.name}/toxics") or []:
            self.remove_toxic(toxic["name"])

    @contextlib.contextmanager
    def toxic(self, kind: str, *, stream: str = "downstream", **attributes: Any) -> Iterator[str]:
        """Add a toxic for the duration of a ``with`` block."""
        name = self.add_toxic(kind, stream=stream, **attributes)
        try:
            yield name
        finally:
            self.remove_toxic(name)

    def set_enabled(self, enabled: bool) -> None:
        """Enable or disable the proxy; disabling closes every connection and refuses new ones."""
        self._api.request("POST", f"/proxies/{self.name}", {"enabled": enabled})

    def delete(self) -> None:
        """Delete the proxy (closing its connections)."""
        with contextlib.suppress(ToxiproxyError, OSError):
            self._api.request("DELETE", f"/proxies/{self.name}")

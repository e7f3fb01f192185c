"""The test servers' ports lie outside the kernel's ephemeral port range.

A client connection takes its local port from that range. A server whose port lies inside it
can find the port taken by some connection's local end when it starts, or restarts after a
test killed it, and then fails to bind ("Address already in use").
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.private_servers import free_port
from tests.support.servers import DEFAULT_URLS

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts" / "servers"
# ${CHATMEM_X_PORT:-N}: a start script's default port.
DEFAULT_PORT = re.compile(r"\$\{CHATMEM_\w+_PORT:-(\d+)\}")
# os.environ.get("CHATMEM_X_PORT", "N"): a test's own server's default port.
TEST_PORT = re.compile(r'"CHATMEM_\w+_PORT", "(\d+)"')
# How many ports after its default one topology uses (nodes on consecutive ports).
CONSECUTIVE = {25451: 2, 26401: 3, 7101: 6, 7201: 3}


def _ephemeral_range() -> range:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    except OSError:
        low, high = "32768", "60999"  # Linux's default
    return range(int(low), int(high) + 1)


def _script_ports() -> set[int]:
    ports: set[int] = set()
    for script in SCRIPTS.rglob("*.sh"):
        for match in DEFAULT_PORT.finditer(script.read_text()):
            first = int(match.group(1))
            ports.update(range(first, first + CONSECUTIVE.get(first, 1)))
    return ports


def _url_ports() -> set[int]:
    ports: set[int] = set()
    for url in DEFAULT_URLS.values():
        hosts = urlsplit(url).netloc.rpartition("@")[2]
        ports.update(int(host.rpartition(":")[2]) for host in hosts.split(","))
    return ports


def _test_ports() -> set[int]:
    return {
        int(port)
        for module in (ROOT / "tests").rglob("*.py")
        for port in TEST_PORT.findall(module.read_text())
    }


def test_the_scripts_name_the_ports_this_test_knows() -> None:
    ports = _script_ports()
    assert {25432, 23306, 25451, 25452, 63799, 27027, 9042, 7687, 8474} <= ports
    assert _url_ports() <= ports
    assert 25439 in _test_ports()  # the fault tests' own PostgreSQL


@pytest.mark.parametrize(
    "ports",
    [_script_ports, _url_ports, _test_ports],
    ids=["scripts/servers defaults", "test URLs", "tests' own servers"],
)
def test_default_ports_are_outside_the_ephemeral_range(ports: Callable[[], set[int]]) -> None:
    ephemeral = _ephemeral_range()
    inside = sorted(port for port in ports() if port in ephemeral)
    assert inside == [], f"ports inside the ephemeral range {ephemeral}"


def test_a_private_server_port_is_free_and_outside_the_ephemeral_range() -> None:
    fixed = _script_ports() | _url_ports()
    for _ in range(20):
        port = free_port()
        assert port not in _ephemeral_range()
        assert port not in fixed
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # nothing holds it

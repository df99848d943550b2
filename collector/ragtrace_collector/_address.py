"""The addresses the receivers bind: the loopback check, the HTTP socket, the gRPC port probe, and how an address
is written (``host:port`` and URLs, an IPv6 literal in brackets).

``--host`` takes a name, an IPv4 address or an IPv6 literal with or without brackets (``::1``, ``[::1]``). An
IPv6 literal must be bracketed wherever a port follows it: gRPC parses ``::1:4317`` as a different address
and fails to bind it, and a URL without the brackets is not a URL.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from urllib.parse import urlsplit

from ragtrace import ConfigurationError

_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}
"""A wildcard bind is reached on this machine through its loopback address (for the page's URL)."""


def bare(host: str) -> str:
    """``host`` without the brackets of an IPv6 literal."""
    return host.strip("[]")


def host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 literal in brackets (``[::1]:4317``), as gRPC and URLs want it."""
    name = bare(host)
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"  # only an IPv6 literal holds a colon


def page_url(host: str, port: int) -> str:
    """The URL of the live page served on ``host``:``port``; a wildcard bind is shown as its loopback address."""
    name = bare(host)
    return f"http://{host_port(_UNSPECIFIED.get(name, name), port)}/"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (then the receivers are not reachable from outside)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare(host)).is_loopback
    except ValueError:
        return False


def _socket(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


def _bind_error(exc: OSError, what: str, host: str, port: int, option: str) -> OSError:
    """The error of a failed bind, naming the option that picks another port when the port is taken."""
    where = host_port(host, port)
    if exc.errno == errno.EADDRINUSE:
        off = ", -1 turns it off" if option == "--grpc-port" else ""
        return OSError(
            f"could not serve {what} on {where}: the port is in use (another collector?); stop what holds it or "
            f"choose another port with {option} (0 picks a free one{off})"
        )
    return OSError(f"could not serve {what} on {where}: {exc.strerror or exc}")


def listen(host: str, port: int) -> socket.socket:
    """A listening socket for OTLP/HTTP; ``OSError`` with a message naming ``--port`` when the port is taken."""
    sock = _socket(host)
    try:
        sock.bind((bare(host), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise _bind_error(exc, "OTLP/HTTP", host, port, "--port") from exc
    return sock


def probe(host: str, port: int) -> None:
    """Raise ``OSError`` naming ``--grpc-port`` when the gRPC receiver could not bind ``host``:``port``.

    gRPC binds later, once the store is open, and reports a taken port with a line of its own on stderr and a
    message that names neither the cause nor the fix; this checks first. Port 0 is always free.
    """
    if port == 0:
        return
    with _socket(host) as sock:
        try:
            sock.bind((bare(host), port))
        except OSError as exc:
            raise _bind_error(exc, "OTLP/gRPC", host, port, "--grpc-port") from exc


def endpoint_url(url: str, path: str, problem: str) -> str:
    """``url`` ending in ``path`` (an OTLP-style endpoint): a base URL gets ``path`` appended, a URL already
    ending in it is kept as given. Raises ``ConfigurationError(problem)`` when ``url`` is not http(s)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(problem)
    if parts.path.rstrip("/").endswith(path):
        return url
    return url.rstrip("/") + path

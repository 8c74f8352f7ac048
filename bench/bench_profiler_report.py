"""Judging a 24-hour profile: the ProfilerReport rule, `smdebug profile rules` and
`smdebug report --profile` over the profile of bench_profiler_read.py (system metrics every
100 ms on one node with 8 CPUs and 1 GPU, framework events for 100,000 steps), with its end
marker written so that the rules do not wait for more data.

Each case runs in a fresh process: opening the profile and the work, imports excluded; CPU
seconds (process), wall seconds and peak RSS, median of ``--repeat`` by CPU; the HTML page's
size where one is written. ``--cprofile DIR`` also writes a cProfile of each case (its clock:
process CPU time, so waiting for a core on a loaded machine costs nothing) to ``DIR/<case>.pstats``
(read it with ``python -m pstats``).

Cases: ``report`` (``invoke_rule(ProfilerReport(trial))``: the ten rules over the windows, their
JSON reports and the HTML page), ``rules`` (``smdebug profile rules PROFILE``: the ten rules'
verdicts) and ``html`` (``smdebug report --profile PROFILE -o page.html``: rules and page).

usage: PYTHONPATH=src python bench/bench_profiler_report.py [--hours 24] [--steps 100000]
       [--repeat 1] [--keep DIR] [--cases report,rules,html] [--cprofile DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CASES = ("report", "rules", "html")


def make_profile(root: str, hours: float, steps: int) -> None:
    """The profile of bench_profiler_read.py under ``root`` (kept when it is there), ended."""
    from bench_profiler_read import write_framework, write_system

    if not os.path.exists(os.path.join(root, "done")):
        t0 = time.perf_counter()
        n_sys = write_system(root, hours)
        n_fw = write_framework(root, hours, steps)
        open(os.path.join(root, "done"), "w").close()
        print(f"wrote {n_sys:,} system rows and {n_fw:,} framework events in {time.perf_counter() - t0:.0f} s")
    from smdebug.profiler.locations import END_MARKER

    open(os.path.join(root, "system", END_MARKER), "a").close()  # the job ended: judge all of it


def child(case: str, root: str, out: str, cprofile: str | None) -> None:
    import cProfile
    import resource

    c0 = time.process_time()
    import matplotlib.figure  # noqa: F401 - the page's charts: an import, not the work

    from smdebug.cli import main as cli_main
    from smdebug.profiler.trial import ProfilerTrial
    from smdebug.rules import invoke_rule
    from smdebug.rules.profiler.report import ProfilerReport

    w1, c1 = time.perf_counter(), time.process_time()
    prof = cProfile.Profile(time.process_time) if cprofile else None
    if prof:
        prof.enable()
    page = os.path.join(out, "page.html")
    summary: dict = {}
    if case == "report":
        rule = ProfilerReport(ProfilerTrial(root), output_dir=out)
        invoke_rule(rule, raise_eval_cond=False)
        page = rule.html_path or ""
        summary = {n: r["Verdict"]["status"] for n, r in rule.sub_reports().items()}
    else:
        argv = ["profile", "rules", root] if case == "rules" else ["report", "--profile", root, "-o", page]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = cli_main(argv)
        if case == "rules":  # its lines "[FIRED ]Rule: verdict: message"
            lines = [ln.removeprefix("FIRED ") for ln in buf.getvalue().splitlines() if not ln.startswith(" ")]
            summary = {ln.split(":")[0]: ln.split(":")[1].strip() for ln in lines[:-1]}
        elif code != 0:
            raise SystemExit(f"smdebug {' '.join(argv)} exited {code}")
    w2, c2 = time.perf_counter(), time.process_time()
    if prof:
        prof.disable()
        prof.dump_stats(os.path.join(cprofile, f"{case}.pstats"))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = os.path.getsize(page) if case != "rules" and page and os.path.exists(page) else None
    print(
        json.dumps(
            {
                "seconds": w2 - w1,
                "cpu": c2 - c1,
                "import_cpu": c1 - c0,
                "max_rss_mb": rss_mb,
                "page_bytes": size,
                "verdicts": summary,
            }
        )
    )


def run(case: str, root: str, repeat: int, cprofile: str | None) -> dict:
    results = []
    for _ in range(repeat):
        out = tempfile.mkdtemp(prefix="bench_profiler_report_")
        try:
            cmd = [sys.executable, __file__, "--child", case, root, out] + ([cprofile] if cprofile else [])
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode:
                raise SystemExit(f"{case} failed:\n{done.stderr[-4000:]}")
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    best = sorted(results, key=lambda r: r["cpu"])[len(results) // 2]
    best["all_cpu"] = [round(r["cpu"], 2) for r in results]
    best["all_seconds"] = [round(r["seconds"], 2) for r in results]
    return best


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", help="generate into (or reuse) this folder and keep it")
    ap.add_argument("--cases", default=",".join(CASES), help=f"a comma-separated subset of {','.join(CASES)}")
    ap.add_argument("--cprofile", help="write each case's cProfile (process CPU clock) into this folder")
    a = ap.parse_args()
    cases = [c for c in a.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"--cases: no case {c!r} (cases: {', '.join(CASES)})")
    if a.cprofile:
        os.makedirs(a.cprofile, exist_ok=True)
    folder = contextlib.nullcontext(a.keep) if a.keep else tempfile.TemporaryDirectory(prefix="bench_profiler_report_")
    with folder as tmp:
        report(os.path.join(tmp, "day"), a, cases)


def report(root: str, a, cases: list) -> None:
    """Each case over the profile at ``root`` (made first when it is not there), and the table."""
    from benchutil import machine

    make_profile(root, a.hours, a.steps)
    print(f"machine: {machine()}; Python {sys.version.split()[0]}", flush=True)
    print(f"profile: {a.hours:g} h, {a.steps:,} steps, at {root}", flush=True)
    rows = []
    for case in cases:
        r = run(case, root, a.repeat, a.cprofile)
        page = "" if r["page_bytes"] is None else f"  page {r['page_bytes'] / 1e6:.2f} MB"
        print(
            f"{case:<7} cpu {r['cpu']:8.2f} s  wall {r['seconds']:8.2f} s  max RSS {r['max_rss_mb']:6.0f} MB"
            f"{page}  cpu runs {r['all_cpu']}  wall runs {r['all_seconds']}",
            flush=True,
        )
        if r["verdicts"]:
            print("        " + ", ".join(f"{k}: {v}" for k, v in sorted(r["verdicts"].items())), flush=True)
        rows.append((case, r))
    print(f"machine after: {machine()}")
    print("| case | CPU s | wall s | max RSS | page |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for case, r in rows:
        page = "—" if r["page_bytes"] is None else f"{r['page_bytes'] / 1e6:.2f} MB"
        print(f"| {case} | {r['cpu']:.1f} | {r['seconds']:.1f} | {r['max_rss_mb']:.0f} MB | {page} |")


if __name__ == "__main__":
    main()

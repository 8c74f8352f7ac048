"""``smdebug profile info|timeline|rules PROFILE``: what a profiled job recorded, its timeline, its
profiler rules.

PROFILE is the profiler's folder (``ProfilerConfig(local_path=...)``, ``<out_dir>/profiler`` by
default, or a SageMaker job's ``profiler-output``; local or ``s3://``). Conventions as the other
subcommands: bad input is one line on stderr and exit status 2; ``--json`` prints one strict JSON
document. ``profile rules`` exits 1 when a rule fired, 2 when a rule could judge nothing (no data,
no GPU data for a GPU rule) that was named with ``--rule``, or when no rule could judge
anything, else 0 (by default GPU rules without GPU data are listed, not failed).
"""

from __future__ import annotations

import logging
import os

from smdebug.cli.common import (
    CliError,
    add_json_argument,
    add_output_argument,
    add_repeatable,
    add_trial_argument,
    check_at_least,
    check_writable,
    emit_json,
    say,
    writing,
)

__all__ = ["add", "open_profile", "find_profile", "open_report_trial", "run_profiler_rules", "PROFILE_SUBFOLDERS"]


def add(sub) -> None:
    p = sub.add_parser("profile", help="a profiled job: what was recorded, one timeline, the profiler rules")
    cmds = p.add_subparsers(dest="profile_command", required=True, metavar="{info,timeline,rules}")

    info = cmds.add_parser("info", help="nodes, time span, steps, framework events and system metrics recorded")
    add_trial_argument(info)
    add_json_argument(info, "print one JSON document")
    info.set_defaults(func=run_info)

    tl = cmds.add_parser(
        "timeline",
        help="one Chrome/Perfetto trace per node: framework events, system "
        "metrics as counters, torch.profiler's detailed trace",
    )
    add_trial_argument(tl)
    add_output_argument(
        tl, "the .json trace file (with several nodes: one file per node, the node's name before the extension)"
    )
    tl.add_argument("--node", help="only this node (algo-1...)")
    tl.add_argument("--start", type=float, help="seconds after the profile's first record")
    tl.add_argument("--end", type=float, help="seconds after the profile's first record")
    tl.add_argument(
        "--max-points",
        type=int,
        default=20000,
        help="at most this many points per system metric; longer series are averaged (default 20000)",
    )
    tl.add_argument("--rules", action="store_true", help="run the profiler rules and show where they fired")
    add_json_argument(tl, "print what was written as one JSON document")
    tl.set_defaults(func=run_timeline)

    rules = cmds.add_parser("rules", help="run the profiler rules (all, or --rule NAME...) and print their verdicts")
    add_trial_argument(rules)
    add_repeatable(rules, "--rule", "NAME", "a profiler rule (repeatable)")
    add_repeatable(rules, "--param", "RULE.NAME=VALUE", "a rule parameter, e.g. StepOutlier.stddev=2 (repeatable)")
    add_json_argument(rules, "print the rules' reports as one JSON document")
    rules.set_defaults(func=run_rules)


# where a profile lies under a folder that holds none itself: an out_dir's ``profiler`` (ProfilerConfig's
# default local_path, <out_dir>/profiler) and a SageMaker job's ``profiler-output``
PROFILE_SUBFOLDERS = ("profiler", "profiler-output")


def _join(path: str, sub: str) -> str:
    return f"{path.rstrip('/')}/{sub}"


def find_profile(path: str) -> str | None:
    """The profiler folder at ``path``: ``path`` itself when it holds profiler data (system/ or
    framework/ files), else its ``profiler`` or ``profiler-output`` folder that does; None."""
    from smdebug.profiler.trial import ProfilerTrial
    from smdebug.storage import is_remote

    for candidate in (path, *(_join(path, sub) for sub in PROFILE_SUBFOLDERS)):
        if candidate != path and not is_remote(path) and not os.path.isdir(os.path.expanduser(candidate)):
            continue
        if ProfilerTrial(candidate).has_data():
            return candidate
    return None


def open_profile(path: str):
    """The profiler trial at ``path``, or a CliError saying why there is none. A folder that holds
    no profile but whose ``profiler`` (an out_dir) or ``profiler-output`` (a SageMaker job) folder
    does is read there, and a line on stderr says so."""
    from smdebug.profiler.trial import ProfilerTrial
    from smdebug.storage import is_remote

    if not path or not path.strip():
        raise CliError("the profile path is empty: give the profiler's folder or s3://bucket/prefix")
    if not is_remote(path):
        local = os.path.expanduser(path)
        if not os.path.exists(local):
            raise CliError(f"{path}: no such folder")
        if not os.path.isdir(local):
            raise CliError(f"{path}: not a folder (give the profiler's folder)")
    found = find_profile(path)
    if found is None:
        raise CliError(
            f"{path} holds no profiler data: no system/ or framework/ files, nor a profiler/ or "
            "profiler-output/ folder with them (give the profiler's folder: ProfilerConfig's local_path, "
            "<out_dir>/profiler by default, or a job's profiler-output)"
        )
    if found != path:
        say(f"smdebug profile: {path} holds no profile itself: reading {found}")
    return ProfilerTrial(found)


def open_report_trial(args):
    """``smdebug report TRIAL`` without ``--profile``: the tensor trial (``open_trial``); when
    ``TRIAL`` is no tensor trial but holds a profile (itself or in ``profiler/``,
    ``profiler-output/``), a CliError that says to add ``--profile``. ``--param`` (the profiler
    rules' parameters) without ``--profile`` is an error too."""
    from smdebug.cli.common import open_trial

    if getattr(args, "param", None):
        raise CliError(
            f"--param {args.param[0]}: sets a profiler rule's parameter, for the profiler report (add --profile)"
        )
    try:
        return open_trial(args.trial)
    except CliError as exc:
        try:
            found = find_profile(args.trial) if args.trial and args.trial.strip() else None
        except Exception:  # noqa: BLE001 - the hint is a bonus: the trial's own error stands
            found = None
        if found is None:
            raise
        where = "" if found == args.trial else f" (in {found})"
        raise CliError(
            f"{exc}; it holds a profile{where}: for the profiler report add --profile "
            f"(smdebug report --profile {args.trial} -o {args.output})"
        ) from None


# ---------------------------------------------------------------- info
def summarize(trial) -> dict:
    import numpy as np

    from smdebug.profiler.views.kineto import kineto_files
    from smdebug.profiler.views.report.stats import MODES, end_timestamp

    # the newest record of any stream: the system samples may stop before the last steps, or after
    first, last = trial.first_timestamp, end_timestamp(trial)
    series = trial.system_series()
    events = trial.framework_events()
    nodes: dict = {}
    for s in series:
        n = nodes.setdefault(s.node_id, {"series": 0, "samples": 0, "devices": {}})
        n["series"] += 1
        n["samples"] += len(s)
        if s.type in ("cpu", "gpu"):
            n["devices"].setdefault(s.type, set()).add(s.name)
    procs: dict = {}
    for node, phase in zip(events.node_id.tolist(), events.phase.tolist()):
        phases = procs.setdefault(str(node), {})
        phases[str(phase)] = phases.get(str(phase), 0) + 1
    steps = {}
    for mode in MODES:
        spans = trial.steps(mode)
        if len(spans):
            d = spans.duration_us
            steps[mode] = {
                "steps": len(spans),
                "first": int(spans.step.min()),
                "last": int(spans.step.max()),
                "mean_ms": float(np.mean(d)) / 1e3,
                "max_ms": float(np.max(d)) / 1e3,
            }
    return {
        "path": trial.path,
        "first_timestamp_us": first,
        "latest_timestamp_us": trial.get_latest_timestamp(),
        "end_timestamp_us": last,
        "duration_s": None if first is None or last is None or last < first else (last - first) / 1e6,
        "job_finished": trial.job_finished(),
        "nodes": {
            k: {
                "series": v["series"],
                "samples": v["samples"],
                "devices": {t: len(d) for t, d in sorted(v["devices"].items())},
            }
            for k, v in sorted(nodes.items())
        },
        "framework_processes": {
            k: {"events": sum(v.values()), "phases": dict(sorted(v.items()))} for k, v in sorted(procs.items())
        },
        "steps": steps,
        "detailed_profiles": [f["key"] for f in kineto_files(trial)],
    }


def run_info(args) -> int:
    trial = open_profile(args.trial)
    info = summarize(trial)
    if args.json:
        emit_json(info)
        return 0
    print(f"profile: {info['path']}")
    dur = "-" if info["duration_s"] is None else f"{info['duration_s']:.1f} s"
    print(f"recorded: {dur} ({'the job ended' if info['job_finished'] else 'no end marker: still running?'})")
    for node, n in info["nodes"].items():
        devices = ", ".join(f"{c} {t.upper()}{'s' if c != 1 else ''}" for t, c in n["devices"].items()) or "no device"
        print(f"node {node}: {n['series']} system metrics, {n['samples']:,} samples ({devices})")
    if not info["nodes"]:
        print("no system metrics")
    for proc, p in info["framework_processes"].items():
        phases = ", ".join(f"{k} {v:,}" for k, v in p["phases"].items())
        print(f"process {proc}: {p['events']:,} framework events ({phases})")
    if not info["framework_processes"]:
        print("no framework events")
    for mode, s in info["steps"].items():
        print(
            f"{mode} steps: {s['steps']:,} ({s['first']}..{s['last']}), mean {s['mean_ms']:.1f} ms, "
            f"max {s['max_ms']:.1f} ms"
        )
    if info["detailed_profiles"]:
        print(f"detailed profiling: {len(info['detailed_profiles'])} torch.profiler trace(s)")
    return 0


# ---------------------------------------------------------------- timeline
def _window_us(trial, args) -> tuple:
    for opt, v in (("--start", args.start), ("--end", args.end)):
        check_at_least(opt, v, 0)
    if args.start is not None and args.end is not None and args.end <= args.start:
        raise CliError(f"--start {args.start:g} --end {args.end:g}: the end must be after the start")
    first = trial.first_timestamp
    start = None if args.start is None else int(first + args.start * 1e6)
    end = None if args.end is None else int(first + args.end * 1e6)
    return start, end


def _node_path(path: str, node: str) -> str:
    root, ext = os.path.splitext(path)
    return f"{root}.{node}{ext or '.json'}"


def run_timeline(args) -> int:
    import json

    from smdebug.exceptions import SMDebugValueError
    from smdebug.profiler.views.timeline import build_timeline, timeline_nodes

    out = check_writable(args.output)
    check_at_least("--max-points", args.max_points, 1)
    trial = open_profile(args.trial)
    start, end = _window_us(trial, args)
    reports = run_profiler_rules(trial) if args.rules else None
    try:
        nodes = [args.node] if args.node else timeline_nodes(trial, start, end)
        written = []
        for node in nodes:
            trace = build_timeline(
                trial, node=node, start_us=start, end_us=end, rule_reports=reports, max_counter_points=args.max_points
            )
            path = out if len(nodes) == 1 else _node_path(out, node)
            text = json.dumps(trace, allow_nan=False, separators=(",", ":"))
            with writing(path), open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            written.append(
                {
                    "node": node,
                    "path": path,
                    "events": len(trace["traceEvents"]),
                    "downsampled": trace["otherData"]["downsampled"],
                }
            )
    except SMDebugValueError as exc:
        raise CliError(str(exc)) from None
    for w in written:
        if w["downsampled"]:
            say(
                f"smdebug profile timeline: {w['node']}: {len(w['downsampled'])} system metrics averaged down to "
                f"{args.max_points} points each (--max-points)"
            )
    if args.json:
        emit_json({"written": written})
        return 0
    for w in written:
        print(
            f"wrote {w['path']} ({w['events']:,} events, node {w['node']}); open it in https://ui.perfetto.dev "
            "or chrome://tracing"
        )
    return 0


# ---------------------------------------------------------------- rules
def _parse_params(specs: list, names: list, known: list) -> dict:
    out: dict = {}
    for spec in specs:
        key, eq, value = spec.partition("=")
        rule, dot, param = key.partition(".")
        if not eq or not dot or not rule or not param:
            raise CliError(f"--param {spec!r}: expected RULE.NAME=VALUE (e.g. StepOutlier.stddev=2)")
        if rule in known and rule not in names:
            raise CliError(f"--param {spec!r}: {rule} is not run (add --rule {rule})")
        if rule not in names:
            raise CliError(f"--param {spec!r}: no profiler rule {rule!r} (rules: {', '.join(names)})")
        out.setdefault(rule, {})[param] = value
    return out


class _AsWritten:
    """A profiler trial judged as it is now: a job without its end marker is not waited for (the
    rules judge the data written so far, up to the trial's latest timestamp)."""

    def __init__(self, trial):
        self._trial = trial

    def job_finished(self) -> bool:
        return True

    def refresh(self) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self._trial, name)


def run_profiler_rules(trial, names: list | None = None, param_specs: list | None = None) -> dict:
    """Each profiler rule (all but ProfilerReport by default) over the profile as written now (a
    running job is not waited for: see :class:`_AsWritten`): ``{name: its report dict}``. The
    rules walk the windows together, each window read once for all of them (their reports are
    those of ``invoke_rule`` on each alone)."""
    from smdebug.exceptions import RuleConfigurationError
    from smdebug.rules.profiler import profiler_rule_classes
    from smdebug.rules.profiler.base import judge_together

    classes = profiler_rule_classes()
    known = [n for n in classes if n != "ProfilerReport"]
    for n in names or []:
        if n not in known:
            raise CliError(f"--rule {n!r}: no such profiler rule (rules: {', '.join(known)})")
    chosen = names or known
    params = _parse_params(param_specs or [], chosen, known)
    running = not trial.job_finished()
    if running:
        trial = _AsWritten(trial)
    rules = {}
    for name in chosen:
        try:
            rules[name] = classes[name](trial, **params.get(name, {}))
        except RuleConfigurationError as exc:
            raise CliError(str(exc)) from None
    if running:  # (once the parameters are known to be right: a bad one is the only line)
        say(f"smdebug profile: {trial.path} has no end marker (the job may still run): judging what was written so far")
    quiet = _SaidByTheVerdicts(rules)
    logger = logging.getLogger("smdebug")
    logger.addFilter(quiet)
    try:
        judge_together(list(rules.values()))
    finally:
        logger.removeFilter(quiet)
    return {name: rule.report for name, rule in rules.items()}


class _SaidByTheVerdicts(logging.Filter):
    """Drops the rules' "<rule>: evaluated no tensor ..." warnings (judge_together's, for a rule that
    judged nothing) while the command runs them: its verdict ("no GPU data", "no data") says the
    same, and each printed a second line for the same rule before the verdicts."""

    def __init__(self, rules):
        super().__init__()
        self.prefixes = tuple(f"{name}: evaluated no tensor" for name in rules)

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.WARNING and record.getMessage().startswith(self.prefixes))


def run_rules(args) -> int:
    from smdebug.profiler.views.report.advice import advice_for
    from smdebug.profiler.views.report.page import verdict_of

    trial = open_profile(args.trial)
    reports = run_profiler_rules(trial, args.rule or None, args.param)
    verdicts = {name: verdict_of(rep) for name, rep in reports.items()}
    fired = [n for n, (_, cls) in verdicts.items() if cls == "fired"]
    unjudged = [n for n, (_, cls) in verdicts.items() if cls == "nodata"]
    if args.json:
        emit_json({"rules": reports, "fired": fired, "not_judged": unjudged})
    else:
        for name in sorted(reports, key=lambda n: (n not in fired, n)):
            text, cls = verdicts[name]
            message = (reports[name].get("Verdict") or {}).get("message", "")
            line = f"{name}: {text}" + (
                f": {message}" if message and not message.startswith(text) else message[len(text) :]
            )
            print(("FIRED " if cls == "fired" else "") + line)
            if cls == "fired":
                print(f"  what to do: {advice_for(name, reports[name])[1]}")
        print(
            f"{len(fired)} of {len(reports)} rules fired"
            + (f"; {len(unjudged)} could not judge: {', '.join(unjudged)}" if unjudged else "")
        )
    if fired:
        return 1
    # a rule named on the command line that judged nothing is not a pass; among all rules (the
    # default), GPU rules on a CPU-only job are expected to have no data
    named_unjudged = [n for n in unjudged if n in args.rule]
    return 2 if named_unjudged or len(unjudged) == len(reports) else 0

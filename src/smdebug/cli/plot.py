"""``smdebug plot TRIAL -o FILE``: one line per matching tensor over steps (the losses by default)."""

from __future__ import annotations

import re
from typing import Any

from smdebug.cli import common

_FORMATS = (".png", ".svg", ".pdf")


def add(sub) -> None:
    p = sub.add_parser("plot", help="plot tensors (the losses by default) over steps to a PNG/SVG file")
    common.add_trial_argument(p)
    p.add_argument("--tensor", metavar="REGEX", help="tensors whose name matches REGEX (default: the losses)")
    p.add_argument("--reduction", help="plot this reduction of each tensor (mean, l2, max, ...)")
    p.add_argument("--abs", action="store_true", help="the reduction of the absolute values")
    p.add_argument("--mode", help="train, eval, predict or global (default: every mode saved, one line each)")
    p.add_argument("--max-lines", type=int, default=30, help="at most this many lines (default 30)")
    p.add_argument("--log", action="store_true", help="a logarithmic y axis (symmetric when values go negative)")
    p.add_argument(
        "--smooth",
        action="store_true",
        help=f"TensorBoard's smoothing (exponential moving average, weight {SMOOTHING})",
    )
    common.add_output_argument(p, "output file: .png, .svg or .pdf")
    p.set_defaults(func=run)


def collect(trial, regex=None, reduction=None, abs_=False, mode=None, max_lines=30, speak=None) -> list:
    """The series ``plot`` draws. A tensor that is not numeric, or empty at every step, is skipped
    with one line to ``speak`` (default: stderr) saying which and why."""
    from smdebug.cli.series import NotPlottable, default_loss_names, tensor_series
    from smdebug.exceptions import TensorUnavailableForStep

    if regex is None:
        names = default_loss_names(trial)
        if not names:
            raise common.CliError(f"{trial.path} has no losses; pick tensors with --tensor REGEX")
    else:
        common.check_regex(regex, "--tensor")
        names = trial.tensor_names(regex=regex)
        if not names:
            raise common.CliError(f"no tensor matches --tensor {regex!r} (see `smdebug info`)")
    modes = [mode] if mode is not None else (trial.modes() or [common.parse_mode("global")])
    out, skipped = [], []
    for i, name in enumerate(names):
        for m in modes:
            try:
                s = tensor_series(trial, name, m, reduction, abs_)
            except TensorUnavailableForStep as exc:
                raise common.CliError(str(exc)) from None
            except NotPlottable as exc:
                (speak or common.say)(f"skipped {exc}")
                skipped.append(name)
                break
            if s is not None:
                if len(modes) > 1:
                    s.label = f"{s.label} ({s.mode})"
                out.append(s)
            if len(out) >= max_lines:
                if i + 1 < len(names):
                    (speak or common.say)(
                        f"drew the first {max_lines} lines (--max-lines): {len(names) - i - 1} more "
                        f"matching tensors not drawn, from {names[i + 1]}"
                    )
                return out
    if not out:
        if skipped and len(skipped) == len(names):
            raise common.CliError(f"nothing to plot: every matching tensor was skipped ({', '.join(names[:5])})")
        what = f"--reduction {reduction}" if reduction else "values"
        raise common.CliError(f"nothing to plot: no {what} saved for {', '.join(names[:5])}")
    return out


LEGEND_TOP = 12  # more lines than this: the legend names the largest, and says how many it leaves out
SMOOTHING = 0.6  # TensorBoard's default smoothing weight


def natural_key(text: str) -> list:
    """``Sequential_2`` before ``Sequential_10``: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def smoothed(values) -> Any:
    """TensorBoard's smoothing: an exponential moving average (weight SMOOTHING), debiased at the
    start; NaN and infinite values are left out of the average (and stay where they are)."""
    import numpy as np

    ys = np.asarray(values, dtype=np.float64)
    out = np.full(ys.shape, np.nan)
    last, n = 0.0, 0
    for i, y in enumerate(ys):
        if not np.isfinite(y):
            out[i] = y
            continue
        last = last * SMOOTHING + (1 - SMOOTHING) * y
        n += 1
        out[i] = last / (1 - SMOOTHING**n)
    return out


def figure(series: list, title: str, by_mode_step: bool, *, log: bool = False, smooth: bool = False):
    """A matplotlib Figure (Agg) with one line per series, in natural order of their labels: integer
    step ticks; steps whose value is NaN or infinite marked with a red x on the axis (the line breaks
    there); ``log``: a logarithmic y axis (symmetric when values go negative); ``smooth``: TensorBoard's
    smoothing over the raw line, drawn faint. Over LEGEND_TOP lines, the legend names the largest
    (by their largest finite magnitude) and how many more there are."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    series = sorted(series, key=lambda s: natural_key(s.label))
    many = len(series) > LEGEND_TOP
    fig = Figure(figsize=(11 if many else 9, 4.8), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    bad_x: list = []
    lines, finite_vals = [], []
    for s in series:
        xs = np.asarray(s.mode_steps if by_mode_step else s.steps)
        ys = np.asarray(s.values, dtype=np.float64)
        finite = np.isfinite(ys)
        bad_x.extend(xs[~finite].tolist())
        shown = np.where(finite, ys, np.nan)
        marker = "." if len(xs) < 60 else None
        if smooth:
            (raw,) = ax.plot(xs, shown, alpha=0.25)
            (line,) = ax.plot(xs, np.where(finite, smoothed(ys), np.nan), color=raw.get_color(), label=s.label)
        else:
            (line,) = ax.plot(xs, shown, marker=marker, label=s.label)
        line.set_gid(s.label)
        lines.append(line)
        finite_vals.append(np.abs(ys[finite]).max() if finite.any() else 0.0)
    if log:
        values = np.concatenate([np.asarray(s.values, dtype=np.float64) for s in series]) if series else np.zeros(0)
        values = values[np.isfinite(values)]
        if values.size and (values > 0).all():
            ax.set_yscale("log")
        elif values.size:
            nonzero = np.abs(values[values != 0])
            ax.set_yscale("symlog", linthresh=float(nonzero.min()) if nonzero.size else 1.0)
    if bad_x:
        ax.scatter(
            sorted(set(bad_x)),
            [0.0] * len(set(bad_x)),
            marker="x",
            color="#d62728",
            s=40,
            zorder=5,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
            label="NaN or inf",
        )
        every_x = [x for s in series for x in (s.mode_steps if by_mode_step else s.steps)]
        lo, hi = min(every_x), max(every_x)
        pad = max((hi - lo) * 0.03, 0.5)
        ax.set_xlim(lo - pad, hi + pad)  # the NaN steps draw no line: the axis still reaches them
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("mode step" if by_mode_step else "global step")
    ax.set_title(title + (" (log scale)" if log else "") + (" (smoothed)" if smooth else ""))
    ax.grid(True, alpha=0.3)
    handles: list[Any] = list(lines)
    if many:
        order = sorted(range(len(lines)), key=lambda i: -finite_vals[i])[:LEGEND_TOP]
        handles = [lines[i] for i in sorted(order)]
        handles.append(Line2D([], [], linestyle="none", label=f"+{len(lines) - len(order)} more (the table lists all)"))
    if bad_x:
        handles = handles + [ax.collections[-1]]
    if handles and many:
        ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    elif handles:
        ax.legend(handles=handles, fontsize="small")
    fig.tight_layout()
    return fig


def run(args) -> int:
    out = common.check_writable(args.output)
    if not out.lower().endswith(_FORMATS):
        raise common.CliError(f"-o {out}: the file name must end in .png, .svg or .pdf")
    common.check_at_least("--max-lines", args.max_lines, 1)
    mode = common.parse_mode(args.mode)
    common.needs_extra("matplotlib", "plot")
    trial = common.open_trial(args.trial)
    series = collect(
        trial,
        args.tensor,
        args.reduction,
        args.abs,
        mode,
        args.max_lines,
        speak=lambda line: common.say(f"smdebug plot: {line}"),
    )
    fig = figure(
        series,
        f"{trial.name}: {args.tensor or 'losses'}",
        by_mode_step=mode is not None,
        log=args.log,
        smooth=args.smooth,
    )
    with common.writing(out):
        fig.savefig(out)
    print(f"wrote {out}: {len(series)} line(s), {sum(len(s.values) for s in series)} points")
    return 0

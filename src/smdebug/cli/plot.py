"""``smdebug plot TRIAL -o FILE``: one line per matching tensor over steps (the losses by default)."""

from __future__ import annotations

from smdebug.cli.common import (
    CliError,
    add_trial_argument,
    check_at_least,
    check_writable,
    needs_extra,
    open_trial,
    parse_mode,
    say,
    writing,
)
from smdebug.patterns import PatternError
from smdebug.patterns import compile as compile_pattern

_FORMATS = (".png", ".svg", ".pdf")


def add(sub) -> None:
    p = sub.add_parser("plot", help="plot tensors (the losses by default) over steps to a PNG/SVG file")
    add_trial_argument(p)
    p.add_argument("--tensor", metavar="REGEX", help="tensors whose name matches REGEX (default: the losses)")
    p.add_argument("--reduction", help="plot this reduction of each tensor (mean, l2, max, ...)")
    p.add_argument("--abs", action="store_true", help="the reduction of the absolute values")
    p.add_argument("--mode", help="train, eval, predict or global (default: every mode saved, one line each)")
    p.add_argument("--max-lines", type=int, default=30, help="at most this many lines (default 30)")
    p.add_argument("-o", "--output", required=True, help="output file: .png, .svg or .pdf")
    p.set_defaults(func=run)


def collect(trial, regex=None, reduction=None, abs_=False, mode=None, max_lines=30, speak=None) -> list:
    """The series ``plot`` draws. A tensor that is not numeric, or empty at every step, is skipped
    with one line to ``speak`` (default: stderr) saying which and why."""
    from smdebug.cli.common import say
    from smdebug.cli.series import NotPlottable, default_loss_names, tensor_series
    from smdebug.exceptions import TensorUnavailableForStep

    if regex is None:
        names = default_loss_names(trial)
        if not names:
            raise CliError(f"{trial.path} has no losses; pick tensors with --tensor REGEX")
    else:
        try:
            compile_pattern(regex, arg="--tensor")
        except PatternError as exc:
            raise CliError(str(exc)) from None
        names = trial.tensor_names(regex=regex)
        if not names:
            raise CliError(f"no tensor matches --tensor {regex!r} (see `smdebug info`)")
    modes = [mode] if mode is not None else (trial.modes() or [parse_mode("global")])
    out, skipped = [], []
    for i, name in enumerate(names):
        for m in modes:
            try:
                s = tensor_series(trial, name, m, reduction, abs_)
            except TensorUnavailableForStep as exc:
                raise CliError(str(exc)) from None
            except NotPlottable as exc:
                (speak or say)(f"skipped {exc}")
                skipped.append(name)
                break
            if s is not None:
                if len(modes) > 1:
                    s.label = f"{s.label} ({s.mode})"
                out.append(s)
            if len(out) >= max_lines:
                if i + 1 < len(names):
                    (speak or say)(f"drew the first {max_lines} lines (--max-lines): {len(names) - i - 1} more "
                                   f"matching tensors not drawn, from {names[i + 1]}")
                return out
    if not out:
        if skipped and len(skipped) == len(names):
            raise CliError(f"nothing to plot: every matching tensor was skipped ({', '.join(names[:5])})")
        what = f"--reduction {reduction}" if reduction else "values"
        raise CliError(f"nothing to plot: no {what} saved for {', '.join(names[:5])}")
    return out


def figure(series: list, title: str, by_mode_step: bool):
    """A matplotlib Figure (Agg) with one line per series."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4.8), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    for s in series:
        xs = s.mode_steps if by_mode_step else s.steps
        ax.plot(xs, s.values, marker="." if len(xs) < 60 else None, label=s.label)
    ax.set_xlabel("mode step" if by_mode_step else "global step")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(series) <= 12:
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def run(args) -> int:
    out = check_writable(args.output)
    if not out.lower().endswith(_FORMATS):
        raise CliError(f"-o {out}: the file name must end in .png, .svg or .pdf")
    check_at_least("--max-lines", args.max_lines, 1)
    mode = parse_mode(args.mode)
    needs_extra("matplotlib", "plot")
    trial = open_trial(args.trial)
    series = collect(trial, args.tensor, args.reduction, args.abs, mode, args.max_lines,
                     speak=lambda line: say(f"smdebug plot: {line}"))
    fig = figure(series, f"{trial.name}: {args.tensor or 'losses'}", by_mode_step=mode is not None)
    with writing(out):
        fig.savefig(out)
    print(f"wrote {out}: {len(series)} line(s), {sum(len(s.values) for s in series)} points")
    return 0

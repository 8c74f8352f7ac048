"""``smdebug run`` / ``smdebug.launch(...)``: a training command with hooks attached without code
changes, and each requested rule as a job beside it, configured as on SageMaker.

>>> result = smdebug.launch(["python", "train.py"], rules=[rule_configs.exploding_tensor()],
...                         out_dir="runs/a/debug-output", actions=["stop"])
>>> result.status, result.issues

Modules: :mod:`~smdebug.launch.spec` (the normalised job spec), :mod:`~smdebug.launch.inputs`
(flags, JSON documents, SDK objects), :mod:`~smdebug.launch.rule_job`, :mod:`~smdebug.launch.launcher`,
``bootstrap/sitecustomize.py`` (the zero-code-change bootstrap) and the per-framework attach code.
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from smdebug.launch.inputs import build_spec
from smdebug.launch.launcher import Launcher, LaunchResult
from smdebug.launch.spec import JobSpec, LaunchConfigError, check_name, check_output, check_seconds

__all__ = [
    "launch",
    "build_spec",
    "make_launcher",
    "Launcher",
    "LaunchResult",
    "JobSpec",
    "LaunchConfigError",
    "default_name",
]


def default_name() -> str:
    return time.strftime("smdebug-run-%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.urandom(2).hex()}"


def launch(
    command: str | Sequence[str],
    *,
    rules: Any = (),
    debugger_hook_config: Any = None,
    collection_configs: Any = (),
    hook_parameters: str | Iterable[str] | dict[str, Any] | None = None,
    tensorboard_output_config: Any = None,
    out_dir: str | None = None,
    run_dir: str | None = None,
    job: str | dict[str, Any] | None = None,
    actions: Any = (),
    name: str | None = None,
    zcc: bool = True,
    stop_grace: float = 120.0,
    term_grace: float = 30.0,
    rule_timeout: float = 600.0,
    echo: Callable[[str], object] | None = None,
    profile: bool = False,
    profiler_config: Any = None,
    profile_interval_ms: int | None = None,
    node_rank: int | None = None,
) -> LaunchResult:
    """Run ``command`` (a list, or a string split on whitespace) with hooks attached and ``rules`` beside it.

    ``rules``: ``rule_configs.<fn>()`` dicts, DebugRuleConfiguration dicts, SageMaker SDK ``Rule``
    objects (duck-typed) or flag strings (``"exploding_tensor:tensor_regex=.*"``); profiler rules too
    (``"ProfilerReport"``, smdebug-rulesconfig profiler rule objects, SDK ``ProfilerRule`` objects:
    see :mod:`~smdebug.launch.profiler_jobs`), which switch profiling on when nothing else does.
    ``debugger_hook_config``: a DebugHookConfig dict or SDK ``DebuggerHookConfig``;
    ``collection_configs``: ``CollectionConfig`` objects, dicts or ``"weights:save_interval=10"``;
    ``job``: a CreateTrainingJob request (dict or JSON path); ``actions``: ``"stop"``, ``"log"``, ...
    for every rule. The trial goes to ``out_dir`` (default ``<run_dir>/debug-output``); the run's
    status.json, events.jsonl and rule-output/ go to ``run_dir`` (default ``smdebug-runs/<name>``).
    ``profile`` / ``profiler_config`` (a ProfilerConfig dict, JSON text or file) / ``profile_interval_ms``:
    the profiler records into the config's LocalPath, default ``<run_dir>/profiler-output``.
    ``node_rank``: this node's rank in a multi-node job (rules run on node 0; see :mod:`~smdebug.launch.nodes`).
    """
    if isinstance(command, str):
        command = command.split()
    # one item given alone: "weights" is one collection, not the collections w, e, i, ...
    rules, collection_configs, actions = (
        [v] if isinstance(v, (str, dict)) or (v is not None and not hasattr(v, "__iter__")) else list(v or ())
        for v in (rules, collection_configs, actions)
    )
    if isinstance(hook_parameters, str):
        hook_parameters = [hook_parameters]
    launcher = make_launcher(  # in this function's order
        command,
        rules=rules,
        hook_config=debugger_hook_config,
        collections=collection_configs,
        hook_parameters=hook_parameters,
        tensorboard=tensorboard_output_config,
        out_dir=out_dir,
        run_dir=run_dir,
        job=job,
        actions=actions,
        name=name,
        zcc=zcc,
        stop_grace=stop_grace,
        term_grace=term_grace,
        rule_timeout=rule_timeout,
        echo=echo,
        profile=profile,
        profiler_config=profiler_config,
        profile_interval_ms=profile_interval_ms,
        node_rank=node_rank,
    )
    return launcher.run()


def make_launcher(
    command: Sequence[str],
    *,
    name: str | None,
    run_dir: str | None,
    out_dir: str | None,
    zcc: bool,
    stop_grace: Any,
    term_grace: Any,
    rule_timeout: Any,
    echo: Callable[[str], object] | None = None,
    node_rank: int | str | None = None,
    flags: bool = False,
    **inputs: Any,
) -> Launcher:
    """The :class:`Launcher` of ``command`` for :func:`launch` and ``smdebug run``, every input checked:
    the job ``name`` (default :func:`default_name`), its ``run_dir`` (default ``smdebug-runs/<name>``),
    which holds the trial (unless ``out_dir``) and the profiler's data; ``inputs``: :func:`build_spec`'s.
    An error names the argument (``stop_grace``), or with ``flags`` the command line's flag (``--stop-grace``)."""

    def where(argument: str) -> str:
        return "--" + argument.replace("_", "-") if flags else argument

    stop_grace, term_grace, rule_timeout = (
        check_seconds(v, where(k))
        for v, k in ((stop_grace, "stop_grace"), (term_grace, "term_grace"), (rule_timeout, "rule_timeout"))
    )
    name = check_name(name, where("name")) if name is not None else default_name()
    run_dir = run_dir or os.path.join("smdebug-runs", name)
    spec = build_spec(
        name=name,
        out_dir=out_dir,
        default_out_dir=os.path.join(os.path.abspath(run_dir), "debug-output"),
        default_profiler_dir=os.path.join(os.path.abspath(run_dir), "profiler-output"),
        **inputs,
    )
    check_output(spec.out_dir, where("out_dir") if out_dir else "the output location")
    return Launcher(
        spec,
        list(command),
        run_dir,
        zcc=zcc,
        stop_grace=stop_grace,
        term_grace=term_grace,
        rule_timeout=rule_timeout,
        echo=echo,
        node_rank=node_rank,
    )


class _CallableModule(types.ModuleType):
    """``smdebug.launch`` is this package once imported (Python binds a submodule as an attribute of
    its parent), so the package itself is callable: ``smdebug.launch(...)`` is :func:`launch`."""

    def __call__(self, *args: Any, **kwargs: Any) -> LaunchResult:
        return launch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

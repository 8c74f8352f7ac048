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

from smdebug.launch.inputs import build_spec
from smdebug.launch.launcher import Launcher, LaunchResult
from smdebug.launch.spec import JobSpec, LaunchConfigError, check_name, check_output, check_seconds

__all__ = ["launch", "build_spec", "Launcher", "LaunchResult", "JobSpec", "LaunchConfigError", "default_name"]


def default_name() -> str:
    return time.strftime("smdebug-run-%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.urandom(2).hex()}"


def launch(
    command,
    *,
    rules=(),
    debugger_hook_config=None,
    collection_configs=(),
    hook_parameters=None,
    tensorboard_output_config=None,
    out_dir=None,
    run_dir=None,
    job=None,
    actions=(),
    name=None,
    zcc=True,
    stop_grace=120.0,
    term_grace=30.0,
    rule_timeout=600.0,
    echo=None,
    profile=False,
    profiler_config=None,
    profile_interval_ms=None,
    node_rank=None,
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
    stop_grace, term_grace, rule_timeout = (
        check_seconds(v, k)
        for v, k in ((stop_grace, "stop_grace"), (term_grace, "term_grace"), (rule_timeout, "rule_timeout"))
    )
    name = check_name(name, "name") if name is not None else default_name()
    run_dir = run_dir or os.path.join("smdebug-runs", name)
    spec = build_spec(
        name=name,
        out_dir=out_dir,
        default_out_dir=os.path.join(os.path.abspath(run_dir), "debug-output"),
        job=job,
        hook_config=debugger_hook_config,
        hook_parameters=hook_parameters,
        collections=collection_configs,
        rules=rules,
        actions=actions,
        tensorboard=tensorboard_output_config,
        profile=profile,
        profiler_config=profiler_config,
        profile_interval_ms=profile_interval_ms,
        default_profiler_dir=os.path.join(os.path.abspath(run_dir), "profiler-output"),
    )
    check_output(spec.out_dir, "out_dir" if out_dir else "the output location")
    launcher = Launcher(
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
    return launcher.run()


class _CallableModule(types.ModuleType):
    """``smdebug.launch`` is this package once imported (Python binds a submodule as an attribute of
    its parent), so the package itself is callable: ``smdebug.launch(...)`` is :func:`launch`."""

    def __call__(self, *args, **kwargs) -> LaunchResult:
        return launch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

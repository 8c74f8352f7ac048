"""``smdebug run [options] -- COMMAND...``: the command with hooks attached (no code change) and rules
beside it as jobs, configured as on SageMaker. Exit status: the command's (2 for bad configuration).
"""

from __future__ import annotations

import argparse

from smdebug.cli.common import CliError, add_repeatable


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a training command with hooks attached and rules as jobs beside it",
        description="Run COMMAND (python train.py, torchrun ..., accelerate launch ...) with the smdebug hook "
        "attached without code changes, and each rule as a job on the live trial. "
        "Example: smdebug run --rule exploding_tensor --action stop -- python train.py",
    )
    p.add_argument("--out-dir", help="the trial: a folder or s3://bucket/prefix (default RUN_DIR/debug-output)")
    p.add_argument("--run-dir", help="status.json, events.jsonl, config/, rule-output/ (default smdebug-runs/NAME)")
    p.add_argument("--name", help="the job's name (default smdebug-run-<time>-<hex>)")
    p.add_argument("--config", metavar="JSON", help="a debughookconfig.json (SageMaker's in-container hook file)")
    p.add_argument(
        "--job",
        metavar="JSON",
        help="a CreateTrainingJob request: DebugHookConfig, "
        "DebugRuleConfigurations, TensorBoardOutputConfig, ProfilerConfig, "
        "ProfilerRuleConfigurations",
    )
    add_repeatable(
        p, "--collection", "NAME[:K=V...]", "a collection to save, e.g. weights:save_interval=10 (repeatable)"
    )
    add_repeatable(p, "--hook-param", "K=V", "a HookParameters entry, e.g. save_interval=100 (repeatable)")
    add_repeatable(
        p,
        "--rule",
        "RULE[:K=V...]",
        "a built-in rule by rule_configs name, e.g. exploding_tensor:tensor_regex=.*, or a profiler "
        "rule by class name, e.g. ProfilerReport or step_outlier:n_outliers=0 (switches profiling "
        "on) (repeatable)",
    )
    add_repeatable(
        p,
        "--rule-file",
        "FILE.py:CLASS[:K=V...]",
        "a rule of your own (a path, file:// or s3://), e.g. my_rules.py:MyRule:threshold=20",
    )
    add_repeatable(p, "--action", "ACTION", "what every rule does when it fires: stop, log, email:ADDRESS, sms:+NUMBER")
    p.add_argument("--tensorboard", metavar="DIR", help="also write TensorBoard event files there")
    p.add_argument(
        "--profile", action="store_true", help="profile the job: system metrics and framework metrics with the defaults"
    )
    p.add_argument(
        "--profiler-config",
        metavar="FILE|JSON",
        help="a ProfilerConfig (CreateTrainingJob's, or a profilerconfig.json): a file or a JSON object",
    )
    p.add_argument(
        "--profile-interval-ms",
        type=int,
        metavar="N",
        help="system metrics every N milliseconds (SageMaker: 100, 200, 500, 1000, 5000 or 60000)",
    )
    p.add_argument(
        "--node-rank",
        metavar="K",
        help="this node's rank in a multi-node job: rules run on node 0 "
        "only (default $NODE_RANK, else $SM_CURRENT_HOST's place in $SM_HOSTS, else 0)",
    )
    p.add_argument("--no-zcc", action="store_true", help="do not attach hooks (the script makes its own)")
    p.add_argument(
        "--stop-grace",
        default=120.0,
        metavar="S",
        help="after a StopTraining action, SIGTERM the job if it still runs after S seconds (120)",
    )
    p.add_argument("--term-grace", default=30.0, metavar="S", help="then SIGKILL it after S more seconds (30)")
    p.add_argument(
        "--rule-timeout", default=600.0, metavar="S", help="how long rule jobs may take after training ended (600)"
    )
    p.add_argument("job_command", nargs=argparse.REMAINDER, metavar="COMMAND", help="-- then the command")
    p.set_defaults(func=run_job)


def run_job(args: argparse.Namespace) -> int:
    from smdebug.launch import LaunchConfigError, make_launcher

    command = list(args.job_command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("no command: smdebug run [options] -- python train.py ...")
    try:
        launcher = make_launcher(
            command,
            flags=True,
            name=args.name,
            run_dir=args.run_dir,
            out_dir=args.out_dir,
            zcc=not args.no_zcc,
            stop_grace=args.stop_grace,
            term_grace=args.term_grace,
            rule_timeout=args.rule_timeout,
            node_rank=args.node_rank,
            job=args.job,
            config=args.config,
            hook_parameters=args.hook_param,
            collections=args.collection,
            rules=args.rule,
            rule_files=args.rule_file,
            actions=args.action,
            tensorboard=args.tensorboard,
            profile=args.profile,
            profiler_config=args.profiler_config,
            profile_interval_ms=args.profile_interval_ms,
        )
        return launcher.run().exit_code
    except LaunchConfigError as exc:
        raise CliError(str(exc)) from None

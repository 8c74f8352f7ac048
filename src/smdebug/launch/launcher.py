"""The launcher: the training command in its own process group, one rule job per rule beside it.

It writes the job's ``config/debughookconfig.json`` (the file the hooks read through
$SMDEBUG_CONFIG_FILE_PATH) and, when profiling is asked for, ``config/profilerconfig.json``
($SMPROFILER_CONFIG_PATH), puts the zero-code-change bootstrap first on PYTHONPATH, starts the
command, and follows it: ``status.json`` and ``events.jsonl`` in the run folder, each rule's
report under ``rule-output/<RuleConfigurationName>/``. When the command ends, by any cause
(``kill -9`` included), the end of training is marked in the trial so every rule job ends.

A StopTraining action writes a stop request into the trial (core.engine.stop_request): the hook ends
training at its next step. If the command is still running ``stop_grace`` seconds later it gets
SIGTERM (the whole process group), then SIGKILL after ``term_grace`` seconds.

SIGINT / SIGTERM to the launcher, from the start of :meth:`Launcher.run` to its end: while the command
runs, the signal goes to its process group and the job ends ``Stopped``; once the command has ended
(the rule jobs finishing), the wait ends at once. Either way the rule jobs still running end
``Stopped``, status.json is final, and ``smdebug run`` exits with the command's code, or 128+N when
signal N came after the command had ended (the training's own status then stays Completed or
Failed). One signal is enough. If the launcher itself dies (``kill -9``), its guard process
(:mod:`smdebug.launch.guard`) ends the job's process group and marks the end of training;
status.json then stays as the launcher last wrote it.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING

from smdebug.launch.guard import Guard, mark_end_of_training
from smdebug.launch.nodes import StopFollower, resolve_node_rank
from smdebug.launch.profiler_jobs import PROFILER_POLL, ProfilerRuleJob, live_rotation, training_marked_ended
from smdebug.launch.profiling import PROFILER_CONFIG_ENV
from smdebug.launch.rule_job import RuleJob
from smdebug.launch.spec import JobSpec, LaunchConfigError
from smdebug.launch.status import StatusBoard
from smdebug.launch.stragglers import end_processes, processes_with_env

if TYPE_CHECKING:
    from smdebug.core.engine.stop_request import StopRequest
    from smdebug.launch.rule_job import RuleJob

__all__ = ["Launcher", "LaunchResult", "BOOTSTRAP_DIR", "ZCC_ENV", "STOP_INTERVAL_ENV"]

logger = logging.getLogger("smdebug")

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
ZCC_ENV = "SMDEBUG_ZCC"
STOP_INTERVAL_ENV = "SMDEBUG_STOP_CHECK_INTERVAL"
LOCAL_POLL = 0.02  # seconds between looks at a local trial while the job is live
REMOTE_POLL = 0.5


@dataclass
class LaunchResult:
    """How a launch ended: the exit code (:func:`exit_code`), the job status (:func:`end_status`), and
    each rule's status."""

    exit_code: int
    status: str
    run_dir: str
    out_dir: str
    rules: list = field(default_factory=list)  # DebugRuleEvaluationStatus dicts
    stop_step: int | None = None
    profiler_rules: list = field(default_factory=list)  # ProfilerRuleEvaluationStatus dicts

    @property
    def issues(self) -> list[str]:
        """The rules (debugger and profiler) that found issues."""
        return [
            r["RuleConfigurationName"]
            for r in [*self.rules, *self.profiler_rules]
            if r["RuleEvaluationStatus"] == "IssuesFound"
        ]


def end_status(rc: int, *, stop_requested: bool, interrupted: bool) -> str:
    """TrainingJobStatus at the end: ``Stopped`` when a rule's StopTraining or a signal to the launcher
    stopped the command while it ran, else ``Completed`` (exit 0) or ``Failed``. A signal, or a rule
    firing, that comes once the command has ended does not change it: the training had ended."""
    if stop_requested or interrupted:
        return "Stopped"
    return "Completed" if rc == 0 else "Failed"


def exit_code(rc: int, late_signal: int | None = None) -> int:
    """What ``smdebug run`` exits with: the command's exit code (128+N when signal N ended it, as a
    shell says), or 128+N when signal N interrupted the launcher after the command had ended."""
    if late_signal is not None:
        return 128 + late_signal
    return rc if rc >= 0 else 128 - rc


def _remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


class Launcher:
    """Runs ``command`` under ``spec``; everything about the configuration is checked when it is made."""

    def __init__(
        self,
        spec: JobSpec,
        command: list[str],
        run_dir: str,
        *,
        zcc: bool = True,
        stop_grace: float = 120.0,
        term_grace: float = 30.0,
        rule_timeout: float = 600.0,
        poll: float | None = None,
        echo: Callable[[str], object] | None = None,
        node_rank: int | str | None = None,
    ) -> None:
        if not command:
            raise LaunchConfigError("no command to run: give it after --")
        self.spec = spec
        self.command = [str(c) for c in command]
        self.run_dir = os.path.abspath(run_dir)
        self.zcc = zcc
        self.stop_grace, self.term_grace, self.rule_timeout = float(stop_grace), float(term_grace), float(rule_timeout)
        self.poll = poll if poll is not None else (REMOTE_POLL if _remote(spec.out_dir) else LOCAL_POLL)
        self._echo = (
            echo if echo is not None else (lambda msg: print(f"smdebug run: {msg}", file=sys.stderr, flush=True))
        )
        self.node_rank = resolve_node_rank(node_rank)
        self._check_out_dir()
        os.makedirs(os.path.join(self.run_dir, "config"), exist_ok=True)
        if self.profiler_dir is not None and not _remote(self.profiler_dir):
            os.makedirs(self.profiler_dir, exist_ok=True)  # the profiler rule jobs open it before the job writes
        self.board = StatusBoard(self.run_dir, spec, self.command, self.node_rank)
        # rules run once, on the node of rank 0; the others follow the trial's stop request
        self.follower = None if self.node_rank == 0 else StopFollower(spec.out_dir, self._follow_stop, self.poll)
        self.jobs = (
            []
            if self.node_rank
            else [
                RuleJob(
                    r,
                    spec.out_dir,
                    os.path.join(self.run_dir, "rule-output", r.name),
                    spec.name,
                    on_change=self._rule_changed,
                    on_stop=self._stop_requested,
                    poll=self.poll,
                    on_judged=self._rule_judged,
                )
                for r in spec.rules
            ]
        )
        self.profiler_jobs = (
            []
            if self.node_rank
            else [
                ProfilerRuleJob(
                    r,
                    self.profiler_dir,  # type: ignore[arg-type]  # set whenever there are profiler rules
                    spec.out_dir,
                    os.path.join(self.run_dir, "rule-output", r.name),
                    spec.name,
                    on_change=self._rule_changed,
                    on_stop=self._stop_requested,
                    poll=max(self.poll, PROFILER_POLL),
                )
                for r in spec.profiler_rules
            ]
        )
        self.board.jobs = self.jobs
        self.board.profiler_jobs = self.profiler_jobs
        self._proc: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._stop_step: int | None = None
        self._job_ended = False  # the command has ended: a StopTraining then stops nothing
        self._interrupted = False  # a signal came while the command ran
        self._signal: int | None = None  # the first SIGINT / SIGTERM to the launcher
        # what the main thread waits for: ("signal", N) from the handler (SimpleQueue.put is reentrant),
        # ("exited", rc) from the job's waiter, ("rule", name) when a rule job has ended
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        marks = self.node_rank == 0  # the other nodes' ends are not the job's end
        self._guard = Guard(self.term_grace, spec.out_dir if marks else None, self.profiler_dir if marks else None)
        self._lock = threading.Lock()
        self._judged_path = os.path.join(self.run_dir, "rules-judged") if self.jobs else None
        self._judged_written: int | None = None
        self._judged_lock = threading.Lock()

    @property
    def profiler_dir(self) -> str | None:
        """The profiler's output folder (ProfilingParameters.LocalPath), None without profiling."""
        if not self.spec.profiler:
            return None
        return self.spec.profiler["ProfilingParameters"]["LocalPath"]

    @property
    def all_jobs(self) -> list:
        return [*self.jobs, *self.profiler_jobs]

    def _check_out_dir(self) -> None:
        from smdebug.core.output.locations import END_OF_JOB
        from smdebug.storage import open_store

        try:
            if not _remote(self.spec.out_dir):
                os.makedirs(self.spec.out_dir, exist_ok=True)
            if open_store(self.spec.out_dir).exists(END_OF_JOB):
                raise LaunchConfigError(
                    f"{self.spec.out_dir} holds a finished trial ({END_OF_JOB} exists): give another --out-dir"
                )
        except LaunchConfigError:
            raise
        except Exception as exc:
            raise LaunchConfigError(f"cannot open the output folder {self.spec.out_dir}: {exc}") from None

    # ---------------------------------------------------------------- set-up
    def write_config(self) -> str:
        return self._write("debughookconfig.json", self.spec.hook_config_json())

    def _write(self, name: str, text: str) -> str:
        """A file of config/, replaced at once (nodes sharing a run folder write the same files)."""
        path = os.path.join(self.run_dir, "config", name)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
        return path

    def write_profiler_config(self) -> str | None:
        """The job's profilerconfig.json, when profiling was asked for (the hooks read it)."""
        if not self.spec.profiler:
            return None
        doc = live_rotation(self.spec.profiler, [j._cls for j in self.profiler_jobs])
        return self._write("profilerconfig.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")

    def child_env(self, config_path: str) -> dict:
        env = dict(os.environ)
        env["SMDEBUG_CONFIG_FILE_PATH"] = config_path
        profiler = self.write_profiler_config()
        if profiler is not None:
            env[PROFILER_CONFIG_ENV] = profiler
        env["SMDEBUG_LAUNCH_RUN_DIR"] = self.run_dir
        env.setdefault(STOP_INTERVAL_ENV, f"{self.poll:g}")
        if self._judged_path is not None:
            from smdebug.core.engine.nonfinite import RULES_JUDGED_ENV

            self._write_judged(-1)
            env[RULES_JUDGED_ENV] = self._judged_path
        if self.zcc:
            env[ZCC_ENV] = "1"
            old = env.get("PYTHONPATH")
            env["PYTHONPATH"] = BOOTSTRAP_DIR + (os.pathsep + old if old else "")
        return env

    # ---------------------------------------------------------------- callbacks from rule jobs
    def _rule_judged(self, job: RuleJob) -> None:
        """A rule job judged a step: the last step every live rule has judged goes to
        ``rules-judged``, which a hook reads after its first non-finite step (core.engine.nonfinite)."""
        from smdebug.core.engine.nonfinite import ALL_JUDGED

        live = [j.judged_step for j in self.jobs if j.status in ("InProgress", "Stopping")]
        self._write_judged(min(live) if live else ALL_JUDGED)

    def _write_judged(self, step: int) -> None:
        with self._judged_lock:
            if self._judged_path is None or step == self._judged_written:
                return
            self._judged_written = step
            tmp = f"{self._judged_path}.{threading.get_ident()}"
            try:
                with open(tmp, "w") as f:
                    f.write(str(step))
                os.replace(tmp, self._judged_path)
            except OSError as exc:
                logger.debug("smdebug: could not write %s: %s", self._judged_path, exc)

    def _rule_changed(self, job: RuleJob) -> None:
        if self._judged_path is not None and job.status not in ("InProgress", "Stopping"):
            self._rule_judged(job)
        self.board.update()
        if job.ended:
            self._events.put(("rule", job.name))
        if job.status in ("IssuesFound", "Error"):
            first = job.details.strip().splitlines()[0] if job.details.strip() else ""
            self._echo(f"rule {job.name}: {job.status}: {first}")

    def _stop_requested(self, job: RuleJob, step: int) -> None:
        fired_at = getattr(job, "fired_at", None)  # a profiler rule: when it fired
        ended = fired_at is not None and training_marked_ended(self.spec.out_dir, self.profiler_dir, fired_at)
        self._request_stop(job.name, step, job.where_fired(step), ended=ended)

    def _follow_stop(self, req: StopRequest) -> None:
        """Another node's rule asked training to stop (node rank > 0)."""
        self._request_stop(req.rule, req.step)

    def _request_stop(self, rule: str, step: int, where: str | None = None, ended: bool = False) -> None:
        """``ended``: training had ended when the rule fired (its end was marked)."""
        with self._lock:
            late = self._job_ended or ended  # nothing to stop: the job ends Completed (or Failed), not Stopped
            if not late:
                if self._stop.is_set():
                    return
                self._stop_step = step
                self._stop.set()
        if late:
            self._echo(
                f"rule {rule} found an issue at {where or f'step {step}'} after training had ended: "
                "StopTraining had nothing to stop"
            )
            return
        self._echo(
            f"rule {rule} found an issue at {where or f'step {step}'}: StopTraining (SIGTERM in "
            f"{self.stop_grace:g} s if the job has not stopped)"
        )
        self.board.update(job_status="Stopping", secondary="Stopping", StopRequest={"Rule": rule, "Step": step})
        threading.Thread(target=self._escalate, name="smdebug-stop", daemon=True).start()

    def _escalate(self) -> None:
        proc = self._proc
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, self.stop_grace), (signal.SIGKILL, self.term_grace)):
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                self._echo(f"the job did not stop within {wait:g} s: sending {sig.name} to its process group")
                self._signal_group(sig)

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # ---------------------------------------------------------------- the run
    def run(self) -> LaunchResult:
        config = self.write_config()
        for note in self.spec.schedule_notes:
            self._echo(note)
        if self.spec.profiling_auto:
            self._echo(
                f"profiling switched on for the profiler rules "
                f"{', '.join(r.name for r in self.spec.profiler_rules)}: system and framework metrics every "
                f"{(self.spec.profiler or {}).get('ProfilingIntervalInMilliseconds')} ms into {self.profiler_dir}"
            )
        self.board.update(secondary="Starting")
        # signals are handled from before the job starts (one that comes while the rule jobs start is
        # passed on once the job runs) to the final status (one while the rule jobs finish ends the wait)
        restore = self._handle_signals()
        try:
            self._guard.start()
            return self._run(config)
        finally:
            self._guard.close()  # released once the end was marked; else (an error) it ends the job
            restore()

    def _run(self, config: str) -> LaunchResult:
        try:
            proc = self._proc = subprocess.Popen(self.command, env=self.child_env(config), start_new_session=True)
        except OSError as exc:
            raise LaunchConfigError(f"cannot start {self.command[0]}: {exc.strerror or exc}") from None
        self._guard.watch(proc.pid)
        self.board.update(secondary="Training", TrainingStartTime=self.board.describe()["LastModifiedTime"])
        for job in self.all_jobs:
            job.start()
        if self.follower is not None:
            self.follower.start()
        try:
            rc = self._wait_job(proc)
        finally:
            with self._lock:  # a rule that fires from now on found its issue after training ended
                self._job_ended = True
            if self.follower is not None:
                self.follower.stop()
        self._reap_group()
        if self.node_rank == 0:
            self._mark_end_of_training()
        self._guard.release()
        # the command has ended: said now, while the rule jobs finish
        self.board.update(ExitCode=exit_code(rc), TrainingEndTime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self._wait_rules()
        status = end_status(rc, stop_requested=self._stop.is_set(), interrupted=self._interrupted)
        self.board.update(job_status=status, secondary=status)
        late = self._signal if not self._interrupted else None
        result = LaunchResult(
            exit_code=exit_code(rc, late),
            status=status,
            run_dir=self.run_dir,
            out_dir=self.spec.out_dir,
            rules=[j.describe() for j in self.jobs],
            stop_step=self._stop_step,
            profiler_rules=[j.describe() for j in self.profiler_jobs],
        )
        self._summary(result, late)
        return result

    def _handle_signals(self) -> Callable[[], object]:
        """SIGINT / SIGTERM to the launcher become events for the main thread (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(
            signum: int, _frame: FrameType | None
        ) -> None:  # no lock taken here: the main thread may hold any of them
            if self._signal is None:
                self._signal = signum
            self._events.put(("signal", signum))

        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return lambda: [signal.signal(s, h) for s, h in old.items()]

    def _wait_job(self, proc: subprocess.Popen) -> int:
        """The command's return code; meanwhile each signal to the launcher goes to its process group."""
        threading.Thread(
            target=lambda: self._events.put(("exited", proc.wait())), name="smdebug-job-wait", daemon=True
        ).start()
        while True:
            kind, value = self._events.get()
            if kind == "exited":
                return value
            if kind == "signal":
                self._interrupt(value)

    def _interrupt(self, signum: int) -> None:
        """A signal while the command runs: passed on to its process group; the job and its rule jobs
        are Stopping (the rule jobs still running when it has ended end Stopped)."""
        first = not self._interrupted
        if first:  # before the job hears it: its hook may mark the end of training as it exits
            self._interrupted = True
            for job in self.all_jobs:
                job.stop()
        self._signal_group(signal.SIGTERM if signum == signal.SIGTERM else signal.SIGINT)
        if first:
            self.board.update(job_status="Stopping", secondary="Stopping")

    def _running_jobs(self) -> list:
        return [j for j in self.all_jobs if not j.ended]

    def _wait_rules(self) -> None:
        """Until every rule job has ended, or ``rule_timeout`` seconds, or a signal (which ends the wait
        at once; also one that came while the command ran): the jobs still running then end
        ``Stopped`` (interrupted) or ``Error`` (too slow)."""
        deadline = time.monotonic() + self.rule_timeout
        while self._signal is None and self._running_jobs():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                self._events.get(timeout=left)
            except queue.Empty:
                break
        running = self._running_jobs()
        if running and self._signal is not None:
            self._echo(
                f"{signal.Signals(self._signal).name}: not waiting for the rule jobs "
                f"{', '.join(j.name for j in running)}: they end Stopped"
            )
        for job in running:
            if self._signal is not None:
                job.give_up(
                    "Stopped",
                    f"The launcher was interrupted ({signal.Signals(self._signal).name}) before the rule job ended.",
                )
            else:
                job.give_up(
                    "Error",
                    f"ClientError: the rule job did not finish within {self.rule_timeout:g} s after training ended",
                )

    def _reap_group(self) -> None:
        """Processes the command left behind are ended: in its group (data-loader workers, ranks), and
        those that left the group with setsid (found by the run folder in their environment)."""
        try:
            self._reap_own_group()
        finally:
            left = end_processes(processes_with_env("SMDEBUG_LAUNCH_RUN_DIR", self.run_dir), min(self.term_grace, 5.0))
            if left:
                self._echo(
                    f"ended {len(left)} process(es) the job left outside its process group: {', '.join(map(str, left))}"
                )

    def _reap_own_group(self) -> None:
        if self._proc is None:
            return
        pgid = self._proc.pid
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + min(self.term_grace, 5.0)
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)  # waiting for processes that are not our children to exit, bounded
        self._signal_group(signal.SIGKILL)

    def _mark_end_of_training(self) -> None:
        mark_end_of_training(self.spec.out_dir, self.profiler_dir)

    def _summary(self, result: LaunchResult, late_signal: int | None = None) -> None:
        for r in [*result.rules, *result.profiler_rules]:
            self._echo(f"{r['RuleConfigurationName']}: {r['RuleEvaluationStatus']}")
        if result.issues:
            self._echo(f"rules that found issues: {', '.join(result.issues)}")
        code = f"exit code {result.exit_code}"
        if late_signal is not None:
            code = f"then {signal.Signals(late_signal).name} while the rule jobs finished: {code}"
        self._echo(f"job {result.status} ({code}); status in {os.path.join(self.run_dir, 'status.json')}")

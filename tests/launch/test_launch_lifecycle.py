"""How a ``smdebug run`` ends: a signal while the rule jobs finish ends the wait at once (one signal
is enough, status.json final), a signal while training runs does not wait for slow rules either, a
rule job of an interrupted run ends Stopped, and a launcher killed with ``kill -9`` takes its job
with it (its guard ends the job's process group and marks the end of training)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import smdebug
from smdebug.core.output.locations import END_OF_JOB
from smdebug.launch.guard import Guard
from smdebug.launch.launcher import end_status, exit_code
from smdebug.launch.rule_job import RuleJob
from smdebug.launch.spec import RuleSpec

SCRIPTS = Path(__file__).parent / "scripts"
MLP = str(SCRIPTS / "mlp.py")
SLOW_RULE = str(SCRIPTS / "slow_rule.py")
DEADLINE = 120.0  # seconds: generous for a loaded machine, far below the 600 s a held signal would take


def _wait_for(condition, what: str, timeout: float = DEADLINE):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:g} s")
        time.sleep(0.05)  # polling a file or a process, bounded by the deadline
    return value


def _status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _smdebug_run(run_dir: Path, flags: list[str], command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "smdebug.cli", "run", "--run-dir", str(run_dir), *flags, "--", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 60.0) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"smdebug run did not end within {timeout:g} s of one signal:\n{err[-3000:]}") from None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has ended, whoever reaps it


def _children(pid: int) -> dict[int, str]:
    """The processes ``pid`` started (its main thread did), with their command lines."""
    out = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            out[int(child)] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            pass
    return out


# ---------------------------------------------------------------- the policies
def test_the_job_status_and_the_exit_code_of_an_ended_run():
    assert end_status(0, stop_requested=False, interrupted=False) == "Completed"
    assert end_status(1, stop_requested=False, interrupted=False) == "Failed"
    assert end_status(0, stop_requested=True, interrupted=False) == "Stopped"
    assert end_status(-2, stop_requested=False, interrupted=True) == "Stopped"
    assert exit_code(0) == 0 and exit_code(3) == 3 and exit_code(-9) == 137
    # a signal once the command had ended: the shell's code for it, whatever the command's
    assert exit_code(0, signal.SIGINT) == 130 and exit_code(1, signal.SIGTERM) == 143


# ---------------------------------------------------------------- item: interrupted rule jobs end Stopped
def test_a_rule_job_of_a_run_interrupted_before_anything_was_saved_ends_stopped(tmp_path):
    trial = tmp_path / "trial"
    trial.mkdir()
    (trial / END_OF_JOB).write_bytes(b"")  # the launcher marked the end: the job saved nothing
    job = RuleJob(
        RuleSpec("ExplodingTensor", {"rule_to_invoke": "ExplodingTensor"}),
        str(trial),
        str(tmp_path / "out"),
        "run",
        poll=0.02,
    )
    job.stop()  # the launcher was interrupted
    job.start()
    assert job.join(DEADLINE)
    assert job.status == "Stopped", job.details
    assert "interrupted" in job.details
    assert json.loads((tmp_path / "out" / "report.json").read_text())["RuleEvaluationStatus"] == "Stopped"


def test_a_job_the_launcher_gave_up_on_keeps_that_status(tmp_path):
    trial = tmp_path / "trial"
    trial.mkdir()
    job = RuleJob(
        RuleSpec("ExplodingTensor", {"rule_to_invoke": "ExplodingTensor"}),
        str(trial),
        str(tmp_path / "out"),
        "run",
        poll=0.02,
    )
    job.start()  # waits for the trial's first files
    job.give_up("Stopped", "The launcher was interrupted (SIGINT) before the rule job ended.")
    (trial / END_OF_JOB).write_bytes(b"")  # now the thread ends too ("no data"): dropped
    assert job.join(DEADLINE)
    assert job.status == "Stopped" and job.details.startswith("The launcher was interrupted (SIGINT)")
    assert json.loads((tmp_path / "out" / "report.json").read_text())["RuleEvaluationStatus"] == "Stopped"


def test_interrupting_the_launcher_before_the_job_saved_anything_ends_the_rule_stopped(tmp_path):
    started = tmp_path / "started"
    proc = _smdebug_run(
        tmp_path / "r",
        ["--rule", "exploding_tensor"],
        [sys.executable, "-c", f"import time; open({str(started)!r}, 'w').close(); time.sleep(600)"],
    )
    try:
        _wait_for(started.exists, "start of the job")
        proc.send_signal(signal.SIGINT)
        _out, err = _finish(proc)
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-3000:]
    status = _status(tmp_path / "r")
    assert status["TrainingJobStatus"] == "Stopped" and status["SecondaryStatus"] == "Stopped"
    (rule,) = status["DebugRuleEvaluationStatuses"]
    assert rule["RuleEvaluationStatus"] == "Stopped", rule["StatusDetails"]
    assert "hook was attached" not in rule["StatusDetails"]


# ---------------------------------------------------------------- signals while slow rule jobs run
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_one_signal_while_the_rule_jobs_finish_ends_the_run_at_once(tmp_path, sig):
    pytest.importorskip("torch")
    busy = tmp_path / "rule-busy"
    run_dir = tmp_path / "r"
    proc = _smdebug_run(
        run_dir,
        ["--collection", "losses:save_interval=1", "--rule-file", f"{SLOW_RULE}:Slow:seconds=600:marker={busy}"],
        [sys.executable, MLP, "--steps", "3"],
    )
    try:
        # training has ended (the launcher says so in status.json) and the rule is in its 600 s step
        _wait_for(lambda: "TrainingEndTime" in _status(run_dir) and busy.exists(), "end of training")
        assert _status(run_dir)["DebugRuleEvaluationStatuses"][0]["RuleEvaluationStatus"] == "InProgress"
        proc.send_signal(sig)
        _out, err = _finish(proc)  # one signal: no second one, no 600 s wait
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err[-3000:]
    status = _status(run_dir)
    # the training had completed: it stays Completed; the rule still judging is Stopped
    assert status["TrainingJobStatus"] == "Completed" and status["SecondaryStatus"] == "Completed"
    assert status["ExitCode"] == 0
    (rule,) = status["DebugRuleEvaluationStatuses"]
    assert rule["RuleEvaluationStatus"] == "Stopped"
    assert rule["StatusDetails"] == f"The launcher was interrupted ({sig.name}) before the rule job ended."
    report = json.loads((run_dir / "rule-output" / "Slow" / "report.json").read_text())
    assert report["RuleEvaluationStatus"] == "Stopped"
    last = json.loads((run_dir / "events.jsonl").read_text().splitlines()[-1])["detail"]
    assert last["TrainingJobStatus"] == "Completed"
    assert [r["RuleEvaluationStatus"] for r in last["DebugRuleEvaluationStatuses"]] == ["Stopped"]
    assert f"then {sig.name} while the rule jobs finished: exit code {128 + sig}" in err


def test_a_signal_while_training_runs_does_not_wait_for_a_slow_rule(tmp_path):
    pytest.importorskip("torch")
    busy = tmp_path / "rule-busy"
    run_dir = tmp_path / "r"
    proc = _smdebug_run(
        run_dir,
        ["--collection", "losses:save_interval=1", "--rule-file", f"{SLOW_RULE}:Slow:seconds=600:marker={busy}"],
        [sys.executable, MLP, "--steps", "100000", "--step-time", "0.02"],
    )
    try:
        _wait_for(busy.exists, "rule at work")
        proc.send_signal(signal.SIGTERM)
        _out, err = _finish(proc)
    finally:
        proc.kill()
    assert proc.returncode == 143, err[-3000:]  # the job's own end: SIGTERM, passed on
    status = _status(run_dir)
    assert status["TrainingJobStatus"] == "Stopped" and status["ExitCode"] == 143
    assert [r["RuleEvaluationStatus"] for r in status["DebugRuleEvaluationStatuses"]] == ["Stopped"]
    assert (run_dir / "debug-output" / END_OF_JOB).exists()


# ---------------------------------------------------------------- kill -9 of the launcher
def _session_sleeper() -> subprocess.Popen:
    """A stand-in job: a process group of its own."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


def test_the_guard_ends_the_job_and_marks_the_end_when_the_launcher_is_gone(tmp_path):
    job = _session_sleeper()
    try:
        guard = Guard(5.0, str(tmp_path / "trial"), str(tmp_path / "profiler"))
        assert guard.start()
        guard.watch(job.pid)
        guard.close()  # no release: what the guard sees when the launcher dies
        assert job.wait(DEADLINE) == -signal.SIGTERM
        _wait_for(lambda: (tmp_path / "trial" / END_OF_JOB).exists(), "end-of-training marker")
        _wait_for(lambda: (tmp_path / "profiler" / "system" / "training_job_end.ts").exists(), "profiler marker")
    finally:
        job.kill()


def test_a_released_guard_leaves_the_job_alone(tmp_path):
    job = _session_sleeper()
    try:
        guard = Guard(5.0, str(tmp_path / "trial"))
        assert guard.start()
        guard.watch(job.pid)
        guard.release()  # the launcher saw the job end and marked it itself
        assert guard._proc is not None and guard._proc.returncode == 0  # the guard has gone
        assert job.poll() is None and not (tmp_path / "trial").exists()
    finally:
        job.kill()
        job.wait()


@pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
    reason="needs /proc/PID/task/TID/children (Linux)",
)
def test_kill_9_of_the_launcher_ends_the_job_and_marks_the_end_of_training(tmp_path):
    pytest.importorskip("torch")
    run_dir = tmp_path / "r"
    proc = _smdebug_run(
        run_dir,
        ["--collection", "losses:save_interval=1"],
        [sys.executable, MLP, "--steps", "100000", "--step-time", "0.02"],
    )
    job = None
    try:
        for line in proc.stdout:  # the job's own output: it is training
            if line.startswith("last step 3"):
                break
        (job,) = [pid for pid, cmd in _children(proc.pid).items() if MLP in cmd]
        proc.kill()  # kill -9 of the launcher
        proc.wait()
        _wait_for(lambda: not _alive(job), "end of the orphaned job")
        _wait_for(lambda: (run_dir / "debug-output" / END_OF_JOB).exists(), "end-of-training marker")
        _out, err = _finish(proc)  # every process holding the launcher's output is gone (the guard too)
    finally:
        if job is not None and _alive(job):
            os.killpg(job, signal.SIGKILL)
        proc.kill()
    assert "the launcher ended before the job did" in err
    from smdebug.trials import create_trial

    steps = create_trial(str(run_dir / "debug-output")).steps()
    assert steps and steps[-1] < 99999  # the steps written before the job was ended, readable
    assert _status(run_dir)["TrainingJobStatus"] == "InProgress"  # the launcher could not write it (documented)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the job's processes through /proc")
def test_a_grandchild_that_left_the_process_group_is_ended(tmp_path):
    """A process the job started in a session of its own (setsid) outlives the process group the
    launcher ends; the run folder in its environment says it is the job's."""
    from smdebug.launch.stragglers import _alive

    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
    )
    lines: list = []
    result = smdebug.launch([sys.executable, "-c", script], run_dir=str(tmp_path / "r"), zcc=False, echo=lines.append)
    assert result.exit_code == 0
    pid = int(pid_file.read_text())
    assert not _alive(pid), lines
    assert any("outside its process group" in line and str(pid) in line for line in lines), lines

"""The job's own CPU and memory rows: from the kernel's per-task run and wait times and the processes'
resident memory, over the process that profiles and its descendants."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from smdebug.profiler.recording.job_metrics import JobSampler, job_root_pid, open_job

psutil = pytest.importorskip("psutil")
LINUX = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat")


def _proc(root, pid, tasks, resident_pages=0, private_kb=None):
    """A /proc entry: ``tasks`` {tid: (run ns, wait ns)}, statm, and smaps_rollup when given."""
    d = root / str(pid)
    for tid, (run, wait) in tasks.items():
        (d / "task" / str(tid)).mkdir(parents=True, exist_ok=True)
        (d / "task" / str(tid) / "schedstat").write_text(f"{int(run)} {int(wait)} 7\n")
    (d / "statm").write_text(f"9999 {resident_pages} 10 1 0 50 0\n")
    if private_kb is not None:
        (d / "smaps_rollup").write_text(
            f"Rss: 1 kB\nPrivate_Clean: {private_kb[0]} kB\nPrivate_Dirty: {private_kb[1]} kB\nSwap: 0 kB\n"
        )


def test_rows_from_run_and_wait_times_of_every_task_of_the_job(tmp_path):
    children = {100: [101]}
    _proc(tmp_path, 100, {100: (0, 0), 102: (0, 0)}, resident_pages=1000)
    _proc(tmp_path, 101, {101: (0, 0)}, private_kb=(100, 924))
    s = JobSampler(100, proc=str(tmp_path), children=lambda pid: children[pid])
    s.cores, s.ram, s.page = 2, 100 * 2**20, 4096
    first = s.rows(10.0)  # primes the CPU counters: the memory row only
    mem = 100 * (1000 * 4096 + 1024 * 1024) / (100 * 2**20)
    assert first == [("job", "memory", "JobMemoryUsedPercent", pytest.approx(mem))]
    # one second later: the main thread ran 0.5 s and waited 0.25 s, the other ran 0.1 s, the child
    # ran 1 s and waited 0.65 s; a task seen for the first time (103) counts from the next sample
    _proc(tmp_path, 100, {100: (5e8, 2.5e8), 102: (1e8, 0), 103: (9e8, 9e8)}, resident_pages=2000)
    _proc(tmp_path, 101, {101: (1e9, 6.5e8)})
    rows = {d: v for _, _, d, v in s.rows(11.0)}
    assert rows["JobCPUDemand"] == pytest.approx(100 * 2.5 / 2)  # 2.5 s of 2 cores' 2 s
    assert rows["JobCPUUtilization"] == pytest.approx(100 * 1.6 / 2)
    assert rows["JobMemoryUsedPercent"] == pytest.approx(100 * (2000 * 4096 + 1024 * 1024) / (100 * 2**20))


def test_a_process_or_task_that_ended_is_left_out(tmp_path):
    _proc(tmp_path, 100, {100: (0, 0), 102: (0, 0)}, resident_pages=10)
    s = JobSampler(100, proc=str(tmp_path), children=lambda pid: [555])  # 555 is gone
    s.cores = 1
    s.rows(0.0)
    (tmp_path / "100" / "task" / "102" / "schedstat").unlink()
    _proc(tmp_path, 100, {100: (2e8, 0)}, resident_pages=10)
    rows = {d: v for _, _, d, v in s.rows(1.0)}
    assert rows["JobCPUDemand"] == pytest.approx(20.0)


@pytest.mark.skipif(not LINUX, reason="per-task schedstat is Linux's")
def test_a_busy_child_and_memory_kept_show_in_the_rows_of_this_process():
    s = JobSampler(os.getpid())
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        ((*_, before),) = s.rows(time.time())  # the first look finds the child; its CPU counts from the next sample
        kept = np.ones(200 * 2**20, dtype=np.uint8)  # 200 MB, written: resident
        threading.Event().wait(1.0)  # the period measured, not a synchronisation
        rows = {d: v for _, _, d, v in s.rows(time.time())}
    finally:
        busy.kill()
        busy.wait()
    cores = os.cpu_count()
    # the child was runnable all the time (ran or waited for a core, whatever the host's load)
    assert rows["JobCPUDemand"] >= 0.8 * 100 / cores, rows
    assert rows["JobCPUUtilization"] <= rows["JobCPUDemand"]
    grown = (rows["JobMemoryUsedPercent"] - before) / 100 * s.ram
    assert 0.9 * 200 * 2**20 < grown < 1.5 * 200 * 2**20 and kept[-1] == 1


def test_no_job_rows_where_the_kernel_has_no_schedstat(tmp_path, caplog):
    caplog.set_level("INFO", logger="smdebug")
    assert open_job(str(tmp_path)) is None
    assert "no job CPU and memory rows" in caplog.text and "host's rows instead" in caplog.text


def test_the_job_is_the_launchers_tree_when_it_starts_a_process_per_local_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert job_root_pid() == os.getpid()
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert job_root_pid() == os.getpid()
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert job_root_pid() == os.getppid()

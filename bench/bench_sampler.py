"""What one system-metrics sample costs, with and without the job's own rows (profiler.job_metrics).

The sampler's thread CPU time (``time.thread_time``) over ``--samples`` calls of ``sample_once()``
in a loop, a round of each configuration after the other, ``--repeat`` rounds; the median per
sample of each, and the cost of one look for the job's descendants (a scan of /proc). The process
imports torch and starts ``--children`` sleeping child processes first, so that the job has the
threads and processes of a small training job with DataLoader workers. Linux only (the job's rows
read /proc).

usage: python bench/bench_sampler.py [--samples 300] [--repeat 5] [--children 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchutil import machine


def per_sample_us(job, samples: int) -> float:
    from smdebug.profiler.recording.system import SystemMetricsSampler

    s = SystemMetricsSampler(tempfile.mkdtemp(prefix="bench-sampler-"), 100, "algo-1", gpus=None, job=job)
    now = time.time()
    s.host.rows(now)
    if job is not None:
        job.rows(now)
    t = time.thread_time()
    for _ in range(samples):
        s.sample_once()
    return (time.thread_time() - t) / samples * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--children", type=int, default=2)
    args = ap.parse_args()
    import torch

    from smdebug.profiler.recording.job_metrics import JobSampler, open_job

    if open_job() is None:
        raise SystemExit("no per-task schedstat here: the job's rows are Linux's")
    torch.randn(300, 300) @ torch.randn(300, 300)  # torch's threads, as in training
    kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(args.children)]
    try:
        host, both = [], []
        for _ in range(args.repeat):
            host.append(per_sample_us(None, args.samples))
            # a look-up for the descendants happens once a second at most: a round of back-to-back
            # samples counts it about once, as at most one look a second would in a real job
            both.append(per_sample_us(JobSampler(os.getpid(), lookup_s=3600), args.samples))
        job = JobSampler(os.getpid())
        t = time.thread_time()
        for _ in range(20):
            job._pids_at = float("-inf")
            job._job_pids()
        look = (time.thread_time() - t) / 20 * 1e6
    finally:
        for k in kids:
            k.kill()
            k.wait()
    h, b = statistics.median(host), statistics.median(both)
    print(f"machine: {machine()}")
    print(
        f"threads of this process: {len(os.listdir('/proc/self/task'))}; child processes: {args.children}; "
        f"processes on the host: {sum(1 for d in os.listdir('/proc') if d.isdigit())}"
    )
    print(f"host rows only:      {h:6.0f} us CPU a sample (rounds {', '.join(f'{x:.0f}' for x in host)})")
    print(f"host and job's rows: {b:6.0f} us CPU a sample (rounds {', '.join(f'{x:.0f}' for x in both)})")
    print(f"the job's rows:      {b - h:6.0f} us a sample, plus {look:.0f} us a look for its processes")
    for interval_ms in (100, 500):
        looks = 1 / max(1.0, 5 * interval_ms / 1000)  # looks a second, as SystemMetricsSampler sets them
        extra = (b - h) * 1000 / interval_ms + look * looks
        print(
            f"at {interval_ms} ms: the job's rows cost {extra / 1e4:.3f}% of a core "
            f"(the host's rows {h * 1000 / interval_ms / 1e4:.3f}%)"
        )


if __name__ == "__main__":
    main()

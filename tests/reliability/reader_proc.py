"""A reader process for test_readers_and_writer.py: opens a trial that is being written and
refreshes it until the job has ended, checking every refresh.

usage: reader_proc.py URL STEPS WORKERS
prints "n COUNT" after each refresh (COUNT: complete steps listed), then one JSON object:
refreshes, steps, violations
"""

import json
import sys
import time

import numpy as np

from smdebug.trials import create_trial


def expected(step: int, worker: int) -> np.ndarray:
    return np.full((4,), step * 10 + worker, np.float32)


def main() -> None:
    url, n_steps, n_workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    workers = [f"worker_{i}" for i in range(n_workers)]
    trial = create_trial(url, collection_wait_timeout=60)
    violations: list[str] = []
    seen: list[int] = []
    refreshes = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ended = trial.loaded_all_steps
        steps = trial.steps()
        refreshes += 1
        if steps and not 0 <= steps[0] <= steps[-1] < n_steps:
            violations.append(f"refresh {refreshes}: steps outside 0..{n_steps - 1}: {steps}")
        if len(set(steps)) != len(steps) or steps != sorted(steps):
            violations.append(f"refresh {refreshes}: duplicates or disorder in {steps}")
        lost = sorted(set(seen) - set(steps))
        if lost:
            violations.append(f"refresh {refreshes}: steps {lost} were listed and then lost")
        for s in steps[len(seen) :] if steps[: len(seen)] == seen else steps:
            if s in seen:
                continue
            t = trial.tensor("t")
            if t.workers(s) != workers:
                violations.append(f"step {s}: workers {t.workers(s)}")
            for i, w in enumerate(workers):
                if not np.array_equal(t.value(s, worker=w), expected(s, i)):
                    violations.append(f"step {s} worker {w}: wrong value")
        seen = sorted(set(seen) | set(steps))
        print(f"n {len(steps)}", flush=True)
        if ended:
            break
        time.sleep(0.002)  # polling the trial for new steps, bounded by the deadline
    print(
        json.dumps({"refreshes": refreshes, "steps": seen, "violations": violations, "ended": trial.loaded_all_steps})
    )


if __name__ == "__main__":
    main()

"""The end-of-job barrier: ``training_job_end.ts`` once every worker has written everything."""

from __future__ import annotations

import logging
import os
import time

from smdebug.core.output.locations import COLLECTIONS_PREFIX, DONE_SUFFIX, END_OF_JOB, done_key, is_chief_worker
from smdebug.storage import Store

__all__ = ["mark_end_of_training", "END_OF_JOB_WAIT_ENV"]

logger = logging.getLogger("smdebug")
END_OF_JOB_WAIT_ENV = "SMDEBUG_END_OF_JOB_WAIT"


def mark_end_of_training(store: Store, worker: str, workers: int) -> None:
    """Write training_job_end.ts. With several writing workers (include_workers="all"), each
    one leaves a done-file beside its collections file and only the chief writes the marker,
    once all workers are done (or after $SMDEBUG_END_OF_JOB_WAIT seconds, default 120), so that
    readers don't stop reading while a slower worker is still writing. Nothing on SageMaker
    (SageMaker marks the end of the job itself)."""
    from smdebug.core.config.hook_config import is_sagemaker_job

    if is_sagemaker_job():
        return
    if workers > 1:
        store.write(done_key(worker), b"")
        if not is_chief_worker(worker):
            return
        wait = float(os.getenv(END_OF_JOB_WAIT_ENV, "120"))
        deadline = time.monotonic() + wait
        while True:
            done = [k for k in store.list(COLLECTIONS_PREFIX) if k.endswith(DONE_SUFFIX)]
            if len(done) >= workers:
                break
            if time.monotonic() >= deadline:
                logger.warning("smdebug: %d of %d workers finished within %.0f s; marking the end of "
                               "training anyway", len(done), workers, wait)
                break
            time.sleep(0.05)  # polling storage for the other workers' done-files, bounded
    store.write(END_OF_JOB, b"")

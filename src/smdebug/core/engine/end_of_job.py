"""The end of a hook's job: what it holds is written (:func:`write_held`), its writer closed, the
collections file and the end-of-job marker written (:func:`close_hook`), and the end-of-job
barrier: ``training_job_end.ts`` once every worker has written everything."""

from __future__ import annotations

import logging
import os
import time

from smdebug.core.output.locations import COLLECTIONS_PREFIX, DONE_SUFFIX, END_OF_JOB, done_key, is_chief_worker
from smdebug.storage import Store

__all__ = ["close_hook", "end_training_run", "mark_end_of_training", "write_held", "END_OF_JOB_WAIT_ENV"]

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


def end_training_run(hook) -> None:
    """``hook``'s framework ended its training run: what is held is written; what is saved from now
    on (save_scalar, save_tensor: a final accuracy, a test metric) goes to the step after the last
    one, whatever the schedule, written at close."""
    if hook._training_ended:
        return
    hook._write_held()  # (a framework's hook may write more of what it holds)
    hook._begin_step()
    hook._training_ended = True


def write_held(hook) -> None:
    """BaseHook._write_held: end ``hook``'s current step and wait until its writer has written
    everything handed over (a stop request, the end of a training run). An error disables the
    hook, unless errors propagate."""
    try:
        hook.adapter.sync()
        if not hook.disabled:
            hook._end_step()
        if hook._writer is not None:
            hook._writer.flush()
            hook._writer_failed(hook._writer)
    except Exception:
        if hook.propagate_errors:
            raise
        hook.disabled = True
        logger.exception("smdebug: could not write the steps held before stopping")


def close_hook(hook) -> None:
    """BaseHook.close, once: end the last step, write everything, the collections file and the
    end-of-training marker, stop the adapter's threads. Runs also after an error disabled the
    hook: what was saved before is kept."""
    try:
        hook.adapter.sync()
        if not hook.disabled:
            hook._end_step()
            if hook.buffer.scalars:
                hook._flush_records()
    except Exception:
        if hook.propagate_errors:
            raise
        logger.exception("smdebug: could not save the last step")
    hook.buffer.drop()
    writer, hook._writer = hook._writer, None
    if writer is not None:
        writer.flush()
        writer.close()
        hook._writer_failed(writer)
        if writer.failed_steps:
            logger.error("smdebug: %d step(s) of %s could not be written to %s (first: step %s)",
                         len(writer.failed_steps), hook.worker, hook.out_dir, writer.failed_steps[0])
    try:
        if hook.writes:
            hook.export_collections()
            mark_end_of_training(hook.store, hook.worker, hook._get_num_workers() if hook.save_all_workers else 1)
    except Exception:
        if hook.propagate_errors:
            raise
        hook.disabled = True
        logger.exception("smdebug: could not finish writing %s", hook.out_dir)
    finally:
        hook.adapter.shutdown()

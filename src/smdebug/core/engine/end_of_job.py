"""The end of a hook's job: what it holds is written (:func:`write_held`), its writer closed, the
collections file and the end-of-job marker written (:func:`close_hook`), and the end-of-job
barrier: ``training_job_end.ts`` once every worker has written everything."""

from __future__ import annotations

import logging
import os
import time

from smdebug.core.output.locations import COLLECTIONS_PREFIX, DONE_SUFFIX, END_OF_JOB, done_key, is_chief_worker
from smdebug.storage import Store

__all__ = [
    "SavedSteps",
    "close_hook",
    "close_line",
    "end_training_run",
    "mark_end_of_training",
    "write_held",
    "END_OF_JOB_WAIT_ENV",
]

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
                logger.warning(
                    "smdebug: %d of %d workers finished within %.0f s; marking the end of training anyway",
                    len(done),
                    workers,
                    wait,
                )
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
            logger.error(
                "smdebug: %d step(s) of %s could not be written to %s (first: step %s)",
                len(writer.failed_steps),
                hook.worker,
                hook.out_dir,
                writer.failed_steps[0],
            )
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
    if hook.writes:
        _say_close_line(hook)


class SavedSteps:
    """What the close line says of the steps a hook handed to its writer, in bounded memory: how
    many, the first few and the last, and the names of what they held."""

    SHOWN = 12

    def __init__(self) -> None:
        self.count = 0
        self.first: list[int] = []  # the first SHOWN + 1 steps
        self.last = -1
        self.names: set[str] = set()

    def add(self, step: int, names) -> None:
        self.count += 1
        if len(self.first) <= self.SHOWN:
            self.first.append(step)
        self.last = step
        self.names.update(names)

    def text(self) -> str:
        """``0, 33-36``, or ``0..6400`` past SHOWN steps."""
        from smdebug.core.engine.nonfinite import steps_text

        return steps_text(self.first) if self.count <= self.SHOWN else f"{self.first[0]}..{self.last}"


def close_line(hook) -> tuple[str, bool]:
    """The one line a hook writes at close: steps trained, steps saved, what was saved; and whether
    it is a warning (an empty trial: it names what to add)."""
    from smdebug.core.engine.nonfinite import steps_text

    planner = hook.planner
    colls = ", ".join(sorted(c.name for c in planner.to_save)) or "none"
    trained = max(hook.step, -1) + 1 - (hook.resumed_from + 1 if hook.resumed_from is not None else 0)
    saved = hook._saved
    if not saved.count:
        line = f"smdebug: {trained} steps trained, nothing saved to {hook.out_dir}: the trial is empty"
        if planner.prepared and not planner.to_save:
            return line + ". Name what to save: include_collections=['weights', 'gradients', 'losses'].", True
        tips = []
        if "losses" in {c.name for c in planner.to_save} and not getattr(hook, "has_registered_loss_module", True):
            tips.append("no loss was registered (hook.register_loss(loss_fn))")
        tips.append(
            f"the collections saved ({colls}) matched no tensor at a saved step: with no save_config a hook "
            "saves every 500th step (SaveConfig(save_interval=1) saves every step); check "
            "include_collections / include_regex"
        )
        return f"{line}: {'; '.join(tips)}.", True
    tensors = len(saved.names)
    line = (
        f"smdebug: {trained} steps trained, {saved.count} saved (steps {saved.text()}; {_schedule(hook)}), "
        f"{tensors} tensors of collections {colls}, in {hook.out_dir}"
    )
    watch = hook.nonfinite
    if watch.first_step is not None:
        full = [s for s in range(watch.seen_at, watch.seen_at + watch.after + 1) if s <= saved.last]
        line += f"; first non-finite value: {watch.first_name} at step {watch.first_step}" + (
            f", saved in full at steps {steps_text(full)}" if full else ""
        )
    return line, False


def _schedule(hook) -> str:
    """``save_interval 500`` / ``save_interval 1, 500`` of the saved collections, in the current mode."""
    parts = set()
    for c in hook.planner.to_save:
        if c.save_config is not None:
            m = c.save_config.get_save_config(hook.mode)
            parts.add(f"steps {m.save_steps}" if m.save_steps else str(m.save_interval))
    return "save_interval " + ", ".join(sorted(parts, key=lambda p: (len(p), p))) if parts else "no schedule"


def _say_close_line(hook) -> None:
    import sys

    try:
        line, warn = close_line(hook)
    except Exception:  # the summary never fails a close
        logger.debug("smdebug: no close line", exc_info=True)
        return
    if warn:
        logger.warning("%s", line)
    else:
        logger.info("%s", line)
        if os.environ.get("SMDEBUG_QUIET", "").strip().lower() not in ("1", "true"):
            sys.stderr.write(line + "\n")

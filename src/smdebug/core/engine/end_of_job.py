"""The end of a hook's job, what BaseHook.close uses: the end-of-job barrier
(:func:`mark_end_of_training`: ``training_job_end.ts`` once every worker has written everything)
and the one line a hook says at close (:class:`SavedSteps`: what it handed to its writer;
:func:`close_line`)."""

from __future__ import annotations

import logging
import os
import time

from smdebug.core.output.locations import COLLECTIONS_PREFIX, DONE_SUFFIX, END_OF_JOB, done_key, is_chief_worker
from smdebug.storage import Store

__all__ = ["SavedSteps", "close_line", "say_close_line", "mark_end_of_training", "END_OF_JOB_WAIT_ENV"]

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


def close_line(hook, saved: SavedSteps) -> tuple[str, bool]:
    """The one line ``hook`` writes at close (its public state, and ``saved``: the steps it handed to
    its writer): steps trained, steps saved, what was saved; and whether it is a warning (an empty
    trial: it names what to add)."""
    from smdebug.core.engine.nonfinite import steps_text

    planner = hook.planner
    colls = ", ".join(sorted(c.name for c in planner.to_save)) or "none"
    trained = max(hook.step, -1) + 1 - (hook.resumed_from + 1 if hook.resumed_from is not None else 0)
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


def say_close_line(hook, saved: SavedSteps) -> None:
    """Log :func:`close_line` (and write it to stderr unless $SMDEBUG_QUIET); it never fails a close."""
    import sys

    try:
        line, warn = close_line(hook, saved)
    except Exception:  # the summary never fails a close
        logger.debug("smdebug: no close line", exc_info=True)
        return
    if warn:
        logger.warning("%s", line)
    else:
        logger.info("%s", line)
        if os.environ.get("SMDEBUG_QUIET", "").strip().lower() not in ("1", "true"):
            sys.stderr.write(line + "\n")

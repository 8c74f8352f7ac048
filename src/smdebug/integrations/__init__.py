"""Callbacks for the trainers most training scripts are written with; each imports its trainer
only when imported itself (optional extras ``smdebug-open[huggingface]``, ``smdebug-open[lightning]``):

- :mod:`smdebug.integrations.huggingface`: ``SMDebugCallback``, a ``transformers.TrainerCallback``;
- :mod:`smdebug.integrations.lightning`: ``SMDebugCallback``, a ``lightning.pytorch.Callback``.

Both attach a :class:`smdebug.pytorch.Hook` to the trainer's model and take the mode and the step
from the trainer: a TRAIN step is an optimizer step (under gradient accumulation, the micro-batches
of one optimizer step are one step: their layer outputs are numbered ``<layer>_output_<i>`` in it,
and the gradients are saved once, accumulated, just before the optimizer step). What the trainer
logs is saved in the mode that produced it.
"""

from __future__ import annotations

__all__ = ["engine_missing"]


def engine_missing(extra: str, engine: str, exc: ModuleNotFoundError) -> ModuleNotFoundError:
    """The error importing ``smdebug.integrations.<extra>`` raises when its trainer (or a module it
    needs) is not installed: it names the extra to install; raise it ``from exc``."""
    return ModuleNotFoundError(
        f"smdebug.integrations.{extra} needs {engine}, which could not be imported ({exc}): "
        f"pip install 'smdebug-open[{extra}]'",
        name=exc.name,
    )

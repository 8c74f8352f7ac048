"""The workers of a Keras job: $TF_CONFIG's task index, and the other devices of a MirroredStrategy."""

from __future__ import annotations

from smdebug.core.output.locations import worker_name
from smdebug.tensorflow.backends import make_adapter
from smdebug.tensorflow.collection import TF_COLLECTIONS
from smdebug.tensorflow.device import KerasDevice

__all__ = ["Replica", "tf_config_worker"]


def tf_config_worker() -> str | None:
    """``worker_<task index>`` for multi-worker training configured by $TF_CONFIG."""
    import json
    import os

    try:
        task = json.loads(os.environ.get("TF_CONFIG", "") or "{}").get("task") or {}
    except ValueError:
        return None
    index = task.get("index")
    return worker_name(int(index)) if isinstance(index, int) else None


class Replica(KerasDevice):
    """What one more device of a MirroredStrategy writes (include_workers="all"): the same steps
    as the hook, under the device's worker name. Built by the hook, never the active hook."""

    collection_defaults = TF_COLLECTIONS
    make_adapter = staticmethod(make_adapter)  # the hook hands its replicas the same TF tensors

    def __init__(self, options, device: str, workers: int):
        self._configure(options)
        self.worker = device
        self._workers = workers

    def _get_num_workers(self) -> int:
        return self._workers

    @property
    def writes(self) -> bool:
        return not self.dry_run

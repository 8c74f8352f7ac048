"""1.0.34's system event class, built only by the compatibility readers from
:class:`~smdebug.profiler.reading.frames.Series` samples."""

from __future__ import annotations

__all__ = ["ProfilerSystemEvent"]


class ProfilerSystemEvent:
    """One sample of one metric: ``type`` ("cpu", "gpu"...), ``name`` ("cpu0"; None when the file
    gave none), ``dimension``, ``value``, ``node_id`` and ``timestamp`` (epoch seconds, float)."""

    def __init__(self, event_type, name, dimension, value, node_id, timestamp):
        self.type = event_type
        self.name = name
        self.dimension = dimension
        self.value = value
        self.node_id = node_id
        self.timestamp = timestamp

    def __repr__(self):
        return (
            f"ProfilerSystemEvent({self.type!r}, {self.name!r}, {self.dimension!r}, {self.value!r}, "
            f"{self.node_id!r}, {self.timestamp!r})"
        )

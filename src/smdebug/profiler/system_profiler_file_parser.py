"""1.0.34's system event class, built only by the compatibility readers from
:class:`~smdebug.profiler.reading.frames.Series` samples."""

from __future__ import annotations

__all__ = ["ProfilerSystemEvent"]


class ProfilerSystemEvent:
    """One sample of one metric: ``type`` ("cpu", "gpu"...), ``name`` ("cpu0"; None when the file
    gave none), ``dimension``, ``value``, ``node_id`` and ``timestamp`` (epoch seconds, float)."""

    def __init__(
        self, event_type: str, name: str | None, dimension: str, value: float, node_id: str, timestamp: float
    ) -> None:
        self.node_id = node_id  # where and when
        self.timestamp = timestamp
        self.type = event_type  # what
        self.name = name
        self.dimension = dimension
        self.value = value

    def __repr__(self) -> str:
        fields = (self.type, self.name, self.dimension, self.value, self.node_id, self.timestamp)
        return f"ProfilerSystemEvent({', '.join(map(repr, fields))})"

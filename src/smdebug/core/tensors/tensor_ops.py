"""The few tensor operations a framework gives :class:`~smdebug.core.tensors.batched_adapter.BatchedAdapter`.

With them, core takes snapshots (into reused host buffers), defers parameter copies to a
background thread, computes reductions with the framework's own ops and copies a step's
tensors to the host in as few transfers as possible. A framework package implements this
protocol and nothing else of the copy machinery (smdebug.pytorch.adapter: ``TorchOps``).

Every method may be called on the training thread, the copy thread or the writer thread;
none keeps state. "host" means main memory, where ``to_numpy`` works without a copy.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol

import numpy as np

__all__ = ["TensorOps"]


class TensorOps(Protocol):
    def is_tensor(self, value: Any) -> bool:
        """Whether ``value`` is one of the framework's tensors (others go to the numpy adapter)."""

    def detach(self, t: Any) -> Any:
        """The tensor without autograd history (``t`` itself where there is none)."""

    def is_host(self, t: Any) -> bool:
        """Whether the tensor lives in main memory."""

    def is_host_real(self, value: Any) -> bool:
        """Whether ``value`` is one of the framework's tensors, in main memory and not complex (its
        reductions come from ``moments`` of the live tensor): one call on the hot path."""

    def numel(self, t: Any) -> int: ...

    def ndim(self, t: Any) -> int: ...

    def shape(self, t: Any) -> tuple: ...

    def dtype(self, t: Any) -> Hashable: ...

    def is_bool(self, t: Any) -> bool: ...

    def is_complex(self, t: Any) -> bool: ...

    def group_key(self, t: Any) -> Hashable:
        """Tensors with the same key can be stacked / concatenated (device and dtype)."""

    def clone(self, t: Any) -> Any:
        """A copy on the tensor's own device."""

    def empty_host(self, shape: tuple, dtype: Hashable) -> Any:
        """A new, uninitialised host tensor (a buffer that core reuses from step to step)."""

    def copy_into(self, dsts: Sequence, srcs: Sequence) -> None:
        """``dsts[i][...] = srcs[i]`` for all i, in one call if the framework can."""

    def abs(self, t: Any, out: Any = None) -> Any:
        """``|t|``, into ``out`` when given."""

    def stack(self, ts: Sequence) -> Any:
        """0-d tensors of one group into one 1-d tensor."""

    def concat_flat(self, ts: Sequence) -> Any:
        """Tensors of one group, flattened and concatenated."""

    def to_host(self, t: Any) -> Any:
        """A host copy (one transfer)."""

    def to_numpy(self, t: Any) -> np.ndarray:
        """A numpy view of a host tensor (bfloat16 as ml_dtypes.bfloat16)."""

    def reduction_input(self, t: Any) -> Any:
        """The tensor reductions are computed from (e.g. low-precision floats widened)."""

    def reduce(self, t: Any, op: str) -> Any:
        """A reduction of ``reduction_input(t)`` by name ('mean', 'std', 'variance', 'sum',
        'prod', 'l1', 'l2'): the framework's own op, as a 0-d tensor. Raises SMDebugValueError
        for another name. 'min' / 'max' go to ``min_max``."""

    def min_max(self, t: Any) -> tuple[Any, Any]:
        """Both extremes of ``reduction_input(t)`` in one pass where the framework can."""

    def moments(self, ts: Sequence, abs_ts: Sequence | None = None) -> np.ndarray:
        """For real host tensors ``ts`` of one dtype (``reduction_input``s): an N x 5 numpy array
        of that dtype, a row per tensor: ``[min, max, sum, l2 norm, sum of abs_ts[i]]`` (the last
        nan when ``abs_ts`` is None), each by the framework's own op, in as few calls as it can
        and with no copy of the tensors."""

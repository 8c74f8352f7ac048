"""Reductions computed on the device, inside a ``jax.jit``-compiled step: :func:`reductions`.

A step that saves reductions only (a ``ReductionConfig`` with ``save_raw_tensor=False``) need not
hand whole arrays to the host: it returns ``reductions(grads, config)``, a :class:`Reduced` pytree
of one small row per leaf (the leaf's reductions, computed by XLA beside the step), and
``hook.record(grads=...)`` saves those rows as the reduction tensors smdebug 1.0.34 writes
(``smdebug/reductions/<op>/<name>``, ``abs_<op>`` for the absolute variants); the rows are
stacked into one matrix per dtype, a transfer each. Norms are vector norms of the flattened leaf; ``std`` and ``variance`` are
numpy's (``ddof=0``). Integers and float16 / bfloat16 leaves are reduced in float32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug.jax.names import path_name

__all__ = ["Reduced", "reductions", "DEFAULT_REDUCTIONS"]

# what reductions(tree) computes when given no config
DEFAULT_REDUCTIONS = ReductionConfig(reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"])

_OPS: dict[str, Callable[[Any], Any]] = {
    "min": jnp.min,
    "max": jnp.max,
    "mean": jnp.mean,
    "std": jnp.std,
    "variance": jnp.var,
    "sum": jnp.sum,
    "prod": jnp.prod,
    "l1": lambda v: jnp.sum(jnp.abs(v)),
    "l2": lambda v: jnp.sqrt(jnp.sum(jnp.square(v))),
}


@jax.tree_util.register_pytree_node_class
class Reduced:
    """The reductions of a pytree's leaves, as :func:`reductions` returns them: :meth:`row` ``(i)``
    holds the reductions ``ops`` (``(op, abs)`` pairs, in that order) of the leaf named
    ``names[i]`` (its path, ``""`` for a bare array), whose shape was ``shapes[i]``. The rows are
    stacked, one matrix per dtype (``tables``; leaf i is row ``where[i][1]`` of table
    ``where[i][0]``), so that a step's reductions reach the host in a transfer or two. A pytree
    itself: the tables are its leaves, the rest static, so it passes out of ``jax.jit``."""

    def __init__(
        self,
        tables: Sequence[Any],
        names: tuple[str, ...],
        ops: tuple[tuple[str, bool], ...],
        shapes: tuple[tuple[int, ...], ...],
        where: tuple[tuple[int, int], ...],
    ):
        self.tables = tuple(tables)
        self.names = names
        self.ops = ops
        self.shapes = shapes
        self.where = where

    def tree_flatten(self) -> tuple:
        return self.tables, (self.names, self.ops, self.shapes, self.where)

    @classmethod
    def tree_unflatten(cls, aux: tuple, tables: Any) -> Reduced:
        return cls(tables, *aux)

    def row(self, i: int) -> Any:
        """The reductions of leaf ``i``, in the order of ``ops`` (a 1-d array where the tables are)."""
        table, r = self.where[i]
        return self.tables[table][r]

    def as_dict(self) -> dict[str, Any]:
        """``{name: {"min": value, "abs_mean": value, ...}}`` (host values; for a look at them)."""
        tables = jax.device_get(list(self.tables))
        return {
            n: {("abs_" if a else "") + op: tables[t][r, j] for j, (op, a) in enumerate(self.ops)}
            for n, (t, r) in zip(self.names, self.where)
        }

    def __repr__(self) -> str:
        ops = ", ".join(("abs_" if a else "") + op for op, a in self.ops)
        return f"Reduced({len(self.names)} leaves: {ops})"


def _ops(config: Any) -> tuple[tuple[str, bool], ...]:
    if config is None:
        config = DEFAULT_REDUCTIONS
    elif isinstance(config, (list, tuple)) and all(isinstance(c, str) for c in config):
        config = ReductionConfig.from_dict({"reductions": ",".join(config)})
    if not isinstance(config, ReductionConfig):
        raise SMDebugTypeError(
            f"reductions: config must be a ReductionConfig or a list of reduction names "
            f"('mean', 'l2_norm', 'abs_max'), not {type(config).__name__}"
        )
    ops = tuple(config.all_reductions())
    if not ops:
        raise SMDebugValueError(f"reductions: config {config!r} names no reduction")
    return ops


def _row(x: Any, ops: tuple[tuple[str, bool], ...]) -> Any:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating) or x.dtype in (jnp.float16, jnp.bfloat16):
        x = x.astype(jnp.float32)
    flat = x.reshape(-1)
    magnitude = jnp.abs(flat) if any(a for _, a in ops) else None
    return jnp.stack([_OPS[op](magnitude if a else flat) for op, a in ops])


def reductions(tree: Any, config: ReductionConfig | Sequence[str] | None = None) -> Reduced:
    """The reductions of every leaf of ``tree``, computed where the leaves are (inside
    ``jax.jit``: on the device, as part of the compiled step). ``config``: a ``ReductionConfig``
    (its reductions, abs_reductions, norms, abs_norms; e.g. ``hook.reduction_config``), or the
    names a SageMaker config uses (``["mean", "l2_norm", "abs_max"]``); None: min, max, mean, std,
    abs mean and l2 norm. Leaves with no element are left out."""
    ops = _ops(config)
    names, shapes, where = [], [], []
    groups: dict = {}  # dtype -> the rows of that dtype
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        shape = tuple(int(d) for d in jnp.shape(leaf))
        if 0 in shape:
            continue
        row = _row(leaf, ops)
        rows = groups.setdefault(row.dtype, [])
        names.append(path_name(path))
        shapes.append(shape)
        where.append((list(groups).index(row.dtype), len(rows)))
        rows.append(row)
    tables = [jnp.stack(rows) for rows in groups.values()]
    return Reduced(tables, tuple(names), ops, tuple(shapes), tuple(where))

"""A process's rank and world size as its launcher's environment gives them.

For a hook whose framework has no initialised process group (yet): under ``torchrun`` every
process would otherwise be ``worker_0``, and the ranks' steps would collide in one folder. The
launchers, in the order they are read (the first one whose rank variable is set and valid wins):

- torchrun (torch.distributed's env:// convention): ``RANK``, ``WORLD_SIZE``
- Horovod's ``horovodrun``: ``HOROVOD_RANK``, ``HOROVOD_SIZE``
- Open MPI's ``mpirun``: ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``
- MPICH / Intel MPI (PMI): ``PMI_RANK``, ``PMI_SIZE``
- Slurm's ``srun``: ``SLURM_PROCID``, ``SLURM_NTASKS``

A pair that is not two whole numbers with ``0 <= rank < size`` (or whose size is missing) is
ignored, with one warning naming the variable, and the next launcher's is read. Slurm comes last:
a ``torchrun`` or ``mpirun`` inside a Slurm job step gives each of its processes its own rank,
while they all share the step's ``SLURM_PROCID``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["LAUNCHER_RANK_VARIABLES", "LaunchedRank", "env_rank"]

logger = logging.getLogger("smdebug")

LAUNCHER_RANK_VARIABLES: tuple[tuple[str, str], ...] = (
    ("RANK", "WORLD_SIZE"),
    ("HOROVOD_RANK", "HOROVOD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)


@dataclass(frozen=True)
class LaunchedRank:
    """This process's place among the launched ones, and which variable said so."""

    rank: int
    world_size: int
    variable: str


_warned: set[tuple[str, str | None]] = set()  # (variable, value): each bad one is reported once


def _whole(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _bad(var: str, value: str | None, why: str) -> None:
    if (var, value) not in _warned:
        _warned.add((var, value))
        logger.warning("smdebug: $%s=%r %s; it is ignored for naming this worker", var, value, why)


def env_rank(environ: Mapping[str, str] | None = None) -> LaunchedRank | None:
    """The rank and world size from the first launcher's variables set (see the module's doc), or
    None when no launcher set a valid pair."""
    env = os.environ if environ is None else environ
    for rank_var, size_var in LAUNCHER_RANK_VARIABLES:
        raw_rank = env.get(rank_var)
        if raw_rank is None or not raw_rank.strip():
            continue
        raw_size = env.get(size_var)
        rank = _whole(raw_rank)
        size = _whole(raw_size) if raw_size is not None else None
        if rank is None:
            _bad(rank_var, raw_rank, "is not a rank (a whole number >= 0)")
        elif raw_size is None or not raw_size.strip():
            _bad(size_var, raw_size, f"is not set while ${rank_var}={raw_rank!r} is")
        elif size is None or size < 1:
            _bad(size_var, raw_size, "is not a world size (a whole number >= 1)")
        elif rank >= size:
            _bad(rank_var, raw_rank, f"is not below ${size_var}={raw_size!r}")
        else:
            return LaunchedRank(rank, size, rank_var)
    return None

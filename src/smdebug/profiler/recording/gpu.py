"""GPU utilisation and memory per device through NVML (``nvidia-ml-py``, imported as ``pynvml``).

:func:`open_gpus` returns None, with the reason logged once in plain words ("no GPU": the library
is missing, the driver does not load, or there is no device); then no ``gpu`` rows are written at
all, so that a reader never mistakes "not measured" for "idle".
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

__all__ = ["GpuSampler", "open_gpus"]

logger = logging.getLogger("smdebug")


class Nvml(Protocol):
    """What is used of NVML (the ``pynvml`` module, or a stand-in with its functions); device
    handles and the records returned are NVML's own objects."""

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...


class GpuSampler:
    """Rows ``{"Type": "gpu", "Name": "gpu<i>", "Dimension": "GPUUtilization" | "GPUMemoryUtilization"}``:
    the percent of the last sample period a kernel ran (NVML's ``utilization.gpu``) and the percent
    of the device's memory in use."""

    def __init__(self, nvml: Nvml, handles: list[Any]):
        self.nvml = nvml
        self.handles = handles

    def rows(self) -> list[tuple[str, str, str, float]]:
        out: list[tuple[str, str, str, float]] = []
        for i, h in enumerate(self.handles):
            util = self.nvml.nvmlDeviceGetUtilizationRates(h)
            mem = self.nvml.nvmlDeviceGetMemoryInfo(h)
            used = 100.0 * mem.used / mem.total if mem.total else 0.0
            out.append(("gpu", f"gpu{i}", "GPUUtilization", float(util.gpu)))
            out.append(("gpu", f"gpu{i}", "GPUMemoryUtilization", used))
        return out

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a library that may already be gone
            pass


def open_gpus(nvml: Nvml | None = None) -> GpuSampler | None:
    """A GpuSampler over every device, or None ("no GPU", logged) when none can be read."""
    if nvml is None:
        try:
            import pynvml  # the nvidia-ml-py distribution
        except ImportError:
            logger.info("smdebug: profiler: no GPU metrics: nvidia-ml-py is not installed (no GPU)")
            return None
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        logger.info("smdebug: profiler: no GPU metrics: NVML does not start (%s): no GPU", exc)
        return None
    try:
        count = nvml.nvmlDeviceGetCount()
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    except Exception as exc:  # noqa: BLE001
        logger.info("smdebug: profiler: no GPU metrics: NVML lists no device (%s): no GPU", exc)
        GpuSampler(nvml, []).close()
        return None
    if not handles:
        logger.info("smdebug: profiler: no GPU metrics: no GPU")
        GpuSampler(nvml, []).close()
        return None
    return GpuSampler(nvml, handles)

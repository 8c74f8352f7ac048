"""The tensors of a model's modules: each module's name in tensor names, and the numbered names of
its inputs and outputs at a step, ``<module>_input_<i>`` / ``<module>_output_<i>`` (i counts over
the step, so a module called twice saves ``_output_0`` and ``_output_1``).

Most modules save nothing (weights and gradients are saved, not every layer's outputs): their
names are looked up once while the step's plans hold (Planner.epoch), after that a call costs a
dict lookup, not a plan lookup per tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smdebug.exceptions import SMDebugTypeError

__all__ = ["ModuleTensors", "tensors_in"]


class ModuleTensors:
    def __init__(self) -> None:
        self.names: dict = {}  # framework module -> its name in tensor names
        self._silent: dict[str, int] = {}  # base name -> the numbers below it have no plan (in _epoch)
        self._epoch = -1

    def add_model(self, top: str, model: Any, named_modules: Any) -> None:
        """Name a registered model ``top`` and each of its ``(name, module)`` descendants by its
        path in it (the first name wins for a module reached twice)."""
        if model in self.names:
            raise SMDebugTypeError(f"module {top} is registered twice")
        for name, sub in named_modules:
            self.names.setdefault(sub, name)
        self.names[model] = top

    def name_of(self, module: Any) -> str:
        return self.names.get(module) or type(module).__name__

    def save(self, base: str, values: list, first: int, epoch: int, save: Callable[[str, Any], bool]) -> None:
        """``save(f"{base}{first + i}", values[i])`` for each value (``save`` says whether the name
        has a plan), unless the names are known to have none while the plans are those of ``epoch``."""
        silent = self._silent
        if self._epoch != epoch:
            silent.clear()
            self._epoch = epoch
        known = silent.get(base, 0)
        if first + len(values) <= known:
            return
        saved = False
        for i, v in enumerate(values):
            saved = save(f"{base}{first + i}", v) or saved
        if not saved and first <= known:
            silent[base] = first + len(values)


def tensors_in(value: Any, is_tensor: Callable[[Any], bool]) -> list:
    """The tensors in a module's inputs or outputs: a tensor, or a (nested) tuple / list of them
    and other values, as ``is_tensor`` tells them."""
    if is_tensor(value):
        return [value]
    if type(value) is tuple and len(value) == 1 and is_tensor(value[0]):  # a layer's inputs, mostly
        return [value[0]]
    return list(_flatten(value, is_tensor))


def _flatten(value: Any, is_tensor: Callable[[Any], bool]) -> Any:
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flatten(v, is_tensor)
    elif is_tensor(value):
        yield value

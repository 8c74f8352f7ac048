"""smdebug's zero-code-change bootstrap, put first on PYTHONPATH by ``smdebug run``.

It runs in every Python process of the job (ranks, the torchrun agent, data-loader workers), so it
is stdlib-only and lazy: it imports nothing, and only adds a finder to ``sys.meta_path`` that waits
for the user's script to import a framework; the attach code (``smdebug.launch.zcc_<framework>``)
runs right after that framework's module has executed. Active only when SMDEBUG_ZCC=1 (set by the
launcher) and USE_SMDEBUG is not false. The interpreter's own sitecustomize (Debian's apport hook,
a virtualenv's) is run too: only the first ``sitecustomize`` on sys.path is imported otherwise.
"""

import os
import sys

TYPE_CHECKING = False  # the type checker's names, without importing typing at every interpreter start
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

_DIR = os.path.dirname(os.path.abspath(__file__))
_TARGETS = {
    "torch": "smdebug.launch.zcc_torch",
    "xgboost": "smdebug.launch.zcc_xgboost",
    "keras": "smdebug.launch.zcc_keras",
    "mxnet": "smdebug.launch.zcc_mxnet",
}


def _chain() -> None:
    """Run the next sitecustomize on sys.path, the one this file shadows (importing nothing:
    the import system's own PathFinder and module_from_spec are already loaded)."""
    finder = next((f for f in sys.meta_path if getattr(f, "__name__", "") == "PathFinder"), None)
    if finder is None:
        return
    path = [p for p in sys.path if os.path.abspath(p or ".") != _DIR]
    spec = finder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


class _Finder:
    """Finds nothing itself: for a watched module, it asks the finders after it and wraps the
    loader so that the attach code runs after the module executed."""

    def find_spec(
        self, name: str, path: "Sequence[str] | None" = None, target: "ModuleType | None" = None
    ) -> "ModuleSpec | None":
        attach = _TARGETS.get(name)
        if attach is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        del _TARGETS[name]  # once per process
        exec_module = loader.exec_module

        def exec_and_attach(module: "ModuleType") -> None:
            exec_module(module)
            try:
                __import__(attach)
                sys.modules[attach].install()
            except Exception as exc:  # never break the user's import
                sys.stderr.write(f"smdebug: zero-code-change attach for {name} failed: {type(exc).__name__}: {exc}\n")

        loader.exec_module = exec_and_attach  # type: ignore[method-assign]  # this loader's, wrapped
        return spec


def _active() -> bool:
    if os.environ.get("SMDEBUG_ZCC") != "1":
        return False
    return os.environ.get("USE_SMDEBUG", "1").strip().lower() not in ("0", "false", "no", "off")


if _active():
    sys.meta_path.insert(0, _Finder())
try:
    _chain()
except Exception as _exc:  # the other sitecustomize's own failure, reported as Python would
    sys.stderr.write(f"Error in sitecustomize (chained by smdebug); set PYTHONVERBOSE for traceback: {_exc}\n")

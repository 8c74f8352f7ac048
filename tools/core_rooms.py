"""Puts smdebug.core's modules into rooms (sub-packages) and rewrites every import of them.

    python tools/core_rooms.py [--check]

Idempotent: run it again on a tree where other branches added ``smdebug.core.X`` imports of a
moved module (or a flat module that is to move) and it moves what is still flat and rewrites what
still names an old path; a second run on its own output changes nothing. ``--check`` changes
nothing and exits 1 when something would change (for CI).

What it does:
1. ``git mv src/smdebug/core/X.py src/smdebug/core/ROOM/X.py`` for every module of ROOMS still
   flat, and writes each room's ``__init__.py`` (a docstring) when missing.
2. Rewrites, in src/, tests/, bench/, examples/, tools/ (.py) and in the Markdown documents:
   ``smdebug.core.X`` -> ``smdebug.core.ROOM.X``; ``from smdebug.core import X`` -> ``from
   smdebug.core.ROOM import X``; ``core.X`` and ``core/X.py`` in comments and docstrings.
   Outside src/, the documented paths (``smdebug.core.writer`` ...) stay as they are: they work,
   they are what users write, and tests, benchmarks and fixture recipes run code that names them
   under smdebug 1.0.34 too, which has no rooms. User-facing Markdown keeps them as well.
3. Writes a small module at each DOCUMENTED path (``smdebug/core/writer.py`` ...) that makes the old
   name the new module itself (``sys.modules``), so ``import smdebug.core.writer`` and
   ``monkeypatch.setattr("smdebug.core.writer.X", ...)`` act on the one module.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "src" / "smdebug" / "core"

ROOMS = {
    "config": (
        "Configuration values: what to save, how often, reduced how; collections; the hook's options "
        "and SageMaker's hook JSON.",
        [
            "save_config",
            "reduction_config",
            "collection",
            "collection_manager",
            "collection_defaults",
            "hook_options",
            "hook_config",
            "hook_config_values",
        ],
    ),
    "engine": (
        "The hook engine: BaseHook, what a step saves, what it holds, stop requests, the end of a job, "
        "the guard that keeps an error in the hook from stopping training, resuming in a folder.",
        [
            "hook",
            "save_plan",
            "step_buffer",
            "end_of_job",
            "guard",
            "active_hook",
            "stop_request",
            "held_step",
            "resume",
            "arguments",
        ],
    ),
    "tensors": (
        "Tensor adapters: the contract between a framework's tensors and the hook, batched device "
        "snapshots, host buffers, reductions.",
        ["adapter", "tensor_ops", "batched_adapter", "host_buffers", "reductions"],
    ),
    "output": (
        "Output: event files and their index (FileWriter), the writer thread, TensorBoard files, "
        "consolidated index objects, the keys of every object, the records a step writes.",
        ["writer", "step_writer", "tensorboard", "consolidate", "locations", "records"],
    ),
}
# modules that stay at smdebug.core.X: modes, tensor (1.0.34's path of Tensor and StepState),
# utils, metric_names

# old paths kept working (documented, or 1.0.34's): a module there is the moved one
DOCUMENTED = [
    "writer",
    "collection_manager",
    "collection",
    "save_config",
    "reduction_config",
    "stop_request",
    "hook",
    "locations",
    "reductions",
]

ROOM_OF = {m: room for room, (_doc, mods) in ROOMS.items() for m in mods}
SHIM_MARK = "# core_rooms: documented path"
SHIM = '''"""``smdebug.{old}``, a documented import path: the module ``smdebug.{new}`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.{room_pkg} import {mod} as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.{new} import *  # noqa: F403

sys.modules[__name__] = _module  {mark}
'''
# files keeping the old paths on purpose
KEEP = {"tests/core/test_documented_paths.py"}
CODE_DIRS = ["src", "tests", "bench", "examples", "tools"]
# Markdown written for users shows the documented paths; the others name the modules' real places
USER_DOCS = {"README.md"}

_MODS = "|".join(sorted(ROOM_OF, key=len, reverse=True))
_DOTTED = re.compile(rf"\bsmdebug\.core\.({_MODS})\b")
_SHORT = re.compile(rf"(?<![\w.])core\.({_MODS})\b")
_PATH = re.compile(rf"\bcore/({_MODS})\.py\b")
_FROM = re.compile(r"^(?P<indent>[ \t]*)from smdebug\.core import (?P<names>[\w ,]+?)(?P<tail>[ \t]*(#.*)?)$", re.M)


def _is_shim(path: Path) -> bool:
    return path.exists() and SHIM_MARK in path.read_text()


def _git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=REPO, check=True)


def move(dry: bool) -> list[str]:
    changes = []
    for room, (doc, mods) in ROOMS.items():
        init = CORE / room / "__init__.py"
        if not init.exists():
            changes.append(f"create {init.relative_to(REPO)}")
            if not dry:
                init.parent.mkdir(exist_ok=True)
                init.write_text(f'"""{doc}"""\n')
                _git("add", str(init))
        for mod in mods:
            flat, moved = CORE / f"{mod}.py", CORE / room / f"{mod}.py"
            if flat.exists() and not _is_shim(flat):
                if moved.exists():
                    raise SystemExit(f"both {flat} and {moved} exist: merge them by hand, then run again")
                changes.append(f"git mv {flat.relative_to(REPO)} {moved.relative_to(REPO)}")
                if not dry:
                    _git("mv", str(flat), str(moved))
    return changes


def _from_import(m: re.Match, keep: frozenset) -> str:
    names = [n.strip() for n in m.group("names").split(",") if n.strip()]
    groups: dict[str, list[str]] = {}
    for n in names:
        mod = n.split(" as ")[0].strip()
        groups.setdefault("" if mod in keep else ROOM_OF.get(mod, ""), []).append(n)
    if set(groups) == {""}:
        return m.group(0)
    lines = []
    for room, ns in groups.items():
        pkg = "smdebug.core" + (f".{room}" if room else "")
        lines.append(f"{m.group('indent')}from {pkg} import {', '.join(ns)}")
    lines[0] += m.group("tail")
    return "\n".join(lines)


def _dotted(m: re.Match, keep: frozenset) -> str:
    mod = m.group(1)
    return m.group(0) if mod in keep else f"smdebug.core.{ROOM_OF[mod]}.{mod}"


def rewrite_text(text: str, dotted: bool = True, keep_documented: bool = False) -> str:
    """``dotted``: rewrite ``smdebug.core.X`` paths (else only ``core.X`` and ``core/X.py``);
    ``keep_documented``: leave the documented paths (the modules of DOCUMENTED) as they are."""
    keep = frozenset(DOCUMENTED) if keep_documented else frozenset()
    if dotted:
        text = _DOTTED.sub(lambda m: _dotted(m, keep), text)
        text = _FROM.sub(lambda m: _from_import(m, keep), text)
    text = _SHORT.sub(lambda m: f"core.{ROOM_OF[m.group(1)]}.{m.group(1)}", text)
    return _PATH.sub(lambda m: f"core/{ROOM_OF[m.group(1)]}/{m.group(1)}.py", text)


def _files() -> list[Path]:
    out = []
    for d in CODE_DIRS:
        out += sorted((REPO / d).rglob("*.py"))
    out += sorted(
        p
        for p in REPO.rglob("*.md")
        if ".venv" not in p.parts
        and "node_modules" not in p.parts
        and not any(part.startswith(".") for part in p.relative_to(REPO).parts)
    )
    return out


def _ruff() -> str | None:
    local = Path(sys.executable).parent / "ruff"
    return str(local) if local.exists() else shutil.which("ruff")


def sort_imports(paths: list[Path]) -> None:
    """Rewritten import lines sort differently (``smdebug.core.config.x`` before ``smdebug.core.modes``):
    ruff's isort puts them in order, as the project's lint wants."""
    ruff = _ruff()
    if ruff is None:
        print("ruff not found: run `ruff check --fix --select I` on the rewritten files", file=sys.stderr)
        return
    py = [str(p) for p in paths if p.suffix == ".py"]
    if py:
        subprocess.run([ruff, "check", "--fix", "--select", "I", "--quiet", *py], cwd=REPO, check=False)


def rewrite(dry: bool) -> list[str]:
    changes, changed = [], []
    for path in _files():
        rel = path.relative_to(REPO).as_posix()
        if rel in KEEP or _is_shim(path) or rel == "tools/core_rooms.py":
            continue
        old = path.read_text()
        new = rewrite_text(
            old,
            dotted=rel not in USER_DOCS and not rel.startswith("docs/guide/"),
            keep_documented=not rel.startswith("src/"),
        )
        if new != old:
            changes.append(f"rewrite {rel}")
            changed.append(path)
            if not dry:
                path.write_text(new)
    if changed and not dry:
        sort_imports(changed)
    return changes


def shims(dry: bool) -> list[str]:
    changes = []
    for mod in DOCUMENTED:
        path = CORE / f"{mod}.py"
        room = ROOM_OF[mod]
        text = SHIM.format(
            old=f"core.{mod}", new=f"core.{room}.{mod}", room_pkg=f"core.{room}", mod=mod, mark=SHIM_MARK
        )
        if not path.exists() or path.read_text() != text:
            changes.append(f"write {path.relative_to(REPO)}")
            if not dry:
                path.write_text(text)
                _git("add", str(path))
    return changes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if something would change")
    args = ap.parse_args()
    changes = move(args.check)
    changes += rewrite(args.check)
    changes += shims(args.check)
    for c in changes:
        print(c)
    if args.check and changes:
        sys.exit(1)
    if not changes:
        print("nothing to do")


if __name__ == "__main__":
    main()

"""A mutation check over smdebug's trials/ and codec/: deliberate bugs, one at a time, each run
against the tests of its module; a mutant the tests do not fail on "survives".

usage: python tools/mutate.py [--ops swap,drop,cmp] [--modules trials/tensor.py,...]
                              [--tests-from REV] [--limit N] [--timeout S] [-v]

Mutants (found with ``ast``, applied as a text edit of one span, so the rest of the file is kept):
  swap  ``raise E(...)`` of a documented exception (smdebug.exceptions) raises a confusable one instead
  drop  a ``raise`` statement becomes ``pass``
  cmp   a comparison operator is flipped (< and >=, <= and >, == and !=, is and is not, in and not in)
Each mutant is written into a copy of src/ (the working tree is never touched) and the module's
tests run with ``-x`` against it, in this process (``--subprocess``: a fresh interpreter each). ``--tests-from REV`` takes tests/ from a git revision instead of
the working tree (e.g. the revision before a batch of tests, to count what they add); tests that
already fail there on the unmutated code are deselected and reported. Exit status 1 when a
``swap`` or ``drop`` mutant survives (the documented exceptions must all be pinned by tests).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "smdebug"

# the exception a "swap" mutant raises instead: the one a caller could most easily confuse it with
CONFUSABLE = {
    "TensorUnavailableForStep": "StepUnavailable",
    "StepUnavailable": "TensorUnavailableForStep",
    "StepNotYetAvailable": "StepUnavailable",
    "NoMoreData": "StepUnavailable",
    "ShapeUnavailableForStep": "TensorUnavailableForStep",
    "TensorUnavailable": "TensorUnavailableForStep",
    "InvalidWorker": "TensorUnavailableForStep",
    "IndexReaderException": "EventFileCorrupt",
    "EventFileCorrupt": "IndexReaderException",
    "MissingCollectionFiles": "IndexReaderException",
    "StorageError": "EventFileCorrupt",
    "ObjectNotFound": "StorageError",
    "SMDebugValueError": "SMDebugTypeError",
    "SMDebugTypeError": "SMDebugValueError",
    "SMDebugRuntimeError": "SMDebugValueError",
    "SMDebugNotImplementedError": "SMDebugRuntimeError",
}
FLIP = {
    ast.Lt: ">=",
    ast.GtE: "<",
    ast.LtE: ">",
    ast.Gt: "<=",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.In: "not in",
    ast.NotIn: "in",
}
OP_TEXT = {
    ast.Lt: "<",
    ast.GtE: ">=",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

_HOSTILE = "tests/reliability/test_hostile_trials.py"
_EXC = "tests/reliability/test_documented_exceptions.py"
_FUZZ = [
    f"tests/codec/test_fuzz.py::{t}"
    for t in (
        "test_seeds_are_valid",
        "test_hostile_tensor_proto_examples",
        "test_hostile_histogram_example",
        "test_hostile_index_examples",
        "test_accepted_index_edge_values",
    )
]
TESTS = {  # module (relative to src/smdebug) -> tests (files or node ids); the backend "s3" is skipped
    "codec/index.py": ["tests/codec/test_index.py", *_FUZZ, "tests/trials/test_trial_bad_input.py", _HOSTILE],
    "codec/": [
        _EXC,
        *_FUZZ,
        "tests/codec/test_tfrecord.py",
        "tests/codec/test_tensor_roundtrip.py",
        "tests/codec/test_step_records.py",
        _HOSTILE,
    ],
    "trials/": [_EXC, "tests/trials", _HOSTILE],
}
# mutants that behave exactly as the original for every input: (module, start of the raise
# statement's text, or the line before it and that text, the operators) -> why
EQUIVALENT = {
    (
        "trials/tensor.py",
        "raise NoMoreData(step_num",
        "swap drop",
    ): "has_passed_step never answers NOT_YET_AVAILABLE once "
    "loaded_all_steps is set (every step is complete then), so this branch is not reached",
    ("trials/index_state.py", 'raise IndexReaderException(f"{where}: tensorname', "swap drop"): "decode_index refuses "
    "non-string tensornames before a Layout is made",
    (
        "trials/trial.py",
        "if not self.loaded_all_steps:\nraise StepUnavailable(step, mode)",
        "drop",
    ): "wait_for_steps: a step "
    "is UNAVAILABLE before the end only when a later step is complete, and then the next check raises "
    "the same StepUnavailable",
    ("codec/tensor.py", 'raise SMDebugTypeError("bfloat16 needs', "swap drop"): "ml_dtypes is a core dependency",
    (
        "codec/tensor.py",
        'raise EventFileCorrupt(f"cannot shape',
        "swap drop",
    ): "callers check that the sizes match first",
}


@dataclass
class Mutant:
    module: str  # relative to src/smdebug
    op: str
    line: int
    start: tuple[int, int]  # (line, col) of the replaced span, 1-based lines
    end: tuple[int, int]
    text: str  # the replacement
    what: str  # a description
    equivalent: str = ""  # why no test can kill it (see EQUIVALENT)


def _existing(root: Path, args: list[str]) -> list[str]:
    """The tests of ``args`` that exist under ``root`` (files, folders, or file::function)."""
    out = []
    for a in args:
        path, _, func = a.partition("::")
        p = root / path
        if p.exists() and (not func or f"def {func}(" in p.read_text()):
            out.append(str(root / a))
    return out


def _tests_for(module: str) -> list[str]:
    if module in TESTS:
        return TESTS[module]
    return TESTS[module.split("/")[0] + "/"]


def find_mutants(module: str, ops: set[str]) -> list[Mutant]:
    source = (SRC / module).read_text()
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    out: list[Mutant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if "swap" in ops and isinstance(exc, ast.Name) and exc.id in CONFUSABLE:
                out.append(
                    Mutant(
                        module,
                        "swap",
                        node.lineno,
                        (exc.lineno, exc.col_offset),
                        (exc.end_lineno, exc.end_col_offset),
                        CONFUSABLE[exc.id],
                        f"raise {CONFUSABLE[exc.id]} instead of {exc.id}",
                    )
                )
            if "drop" in ops:
                what = ast.get_source_segment(source, node).splitlines()[0][:70]
                out.append(
                    Mutant(
                        module,
                        "drop",
                        node.lineno,
                        (node.lineno, node.col_offset),
                        (node.end_lineno, node.end_col_offset),
                        "pass",
                        f"drop `{what}`",
                    )
                )
        if "cmp" in ops and isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                # the operator lies between the end of the left operand and the start of the right one
                gap_start = (left.end_lineno, left.end_col_offset)
                gap_end = (right.lineno, right.col_offset)
                if gap_start[0] == gap_end[0]:
                    gap = lines[gap_start[0] - 1][gap_start[1] : gap_end[1]]
                    tok = OP_TEXT[type(op)]
                    i = gap.find(tok) if tok not in ("in", "is") else _word(gap, tok)
                    if i >= 0:
                        s = (gap_start[0], gap_start[1] + i)
                        out.append(
                            Mutant(
                                module,
                                "cmp",
                                node.lineno,
                                s,
                                (s[0], s[1] + len(tok)),
                                FLIP[type(op)],
                                f"`{tok}` -> `{FLIP[type(op)]}`",
                            )
                        )
                left = right
    for m in out:
        stmt = lines[m.line - 2].strip() + "\n" + lines[m.line - 1].strip()  # the line before, and the raise's
        m.equivalent = next(
            (
                why
                for (mod, text, ops), why in EQUIVALENT.items()
                if mod == module
                and m.op in ops
                and (stmt.startswith(text) if "\n" in text else stmt.split("\n")[1].startswith(text))
            ),
            "",
        )
    return sorted(out, key=lambda m: (m.line, m.op))


def _word(gap: str, tok: str) -> int:
    """Position of ``in`` / ``is`` as an operator word (not ``not in`` / ``is not``)."""
    for i in range(len(gap)):
        if gap.startswith(tok, i) and (i == 0 or not gap[i - 1].isalnum()):
            rest = gap[i + len(tok) :]
            if not rest[:1].isalnum() and not rest.lstrip().startswith("not"):
                if not gap[:i].rstrip().endswith("not"):
                    return i
    return -1


def apply(m: Mutant, source: str) -> str:
    lines = source.splitlines(keepends=True)
    (l1, c1), (l2, c2) = m.start, m.end
    head = "".join(lines[: l1 - 1]) + lines[l1 - 1][:c1]
    tail = lines[l2 - 1][c2:] + "".join(lines[l2:])
    out = head + m.text + tail
    ast.parse(out)  # every mutant is valid Python
    return out


def run_tests(src_root: Path, tests_root: Path, args: list[str], timeout: float, deselect=()) -> str:
    """'killed', 'survived' or 'timeout'."""
    env = dict(os.environ, PYTHONPATH=str(src_root), PYTHONDONTWRITEBYTECODE="1")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "not s3",
        "--rootdir",
        str(tests_root.parent),
    ]
    cmd += _existing(tests_root.parent, args) + [f"--deselect={d}" for d in deselect]
    try:
        r = subprocess.run(cmd, cwd=tests_root.parent, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    if r.returncode == 0:
        return "survived"
    if r.returncode == 5:  # no tests collected
        return "survived"
    return "killed"


class InProcess:
    """Runs pytest again and again in this process (numpy, pytest and hypothesis imported once):
    before each run the mutated package and the test modules are dropped from sys.modules."""

    def __init__(self, src_root: Path, tests_root: Path):
        self.src_root, self.tests_root = src_root, tests_root
        sys.path.insert(0, str(src_root))
        os.environ["PYTHONPATH"] = str(src_root)  # for the subprocesses some tests start
        sys.dont_write_bytecode = True

    def _purge(self) -> None:
        roots = (str(self.src_root), str(self.tests_root))
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None) or ""
            if name == "smdebug" or name.startswith("smdebug.") or f.startswith(roots):
                del sys.modules[name]

    def run(self, args: list[str], deselect=(), extra=(), timeout: float = 0) -> int:
        """pytest's exit code; a run longer than ``timeout`` s is stopped inside the test that
        hangs (a mutant can make a wait loop endless), which fails it."""
        import pytest

        self._purge()
        if timeout:
            signal.signal(signal.SIGALRM, _hung)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        files = _existing(self.tests_root.parent, args)
        cwd = os.getcwd()
        os.chdir(self.tests_root.parent)
        try:
            return int(
                pytest.main(
                    [
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        "-k",
                        "not s3",
                        "--rootdir",
                        str(self.tests_root.parent),
                        *extra,
                        *files,
                        *[f"--deselect={d}" for d in deselect],
                    ],
                    plugins=[_Quiet()],
                )
            )
        except MutantTimeout:  # raised outside a test (in pytest's own clean-up): still a hang
            return 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            os.chdir(cwd)


class MutantTimeout(Exception):
    pass


def _hung(signum, frame):
    signal.setitimer(signal.ITIMER_REAL, 1)  # again every second until pytest has given up
    raise MutantTimeout("the tests ran past --timeout")


class _Quiet:
    """Collects failed test ids; pytest's output is sent to /dev/null by the caller."""

    def __init__(self):
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.append(report.nodeid)


def baseline_failures(src_root: Path, tests_root: Path, args: list[str]) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(src_root))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "not s3",
        "-rf",
        "--rootdir",
        str(tests_root.parent),
    ]
    cmd += _existing(tests_root.parent, args)
    r = subprocess.run(cmd, cwd=tests_root.parent, env=env, capture_output=True, text=True)
    return [line.split()[1] for line in r.stdout.splitlines() if line.startswith("FAILED ")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="swap,drop")
    ap.add_argument("--modules", default="")
    ap.add_argument("--tests-from", default="")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per mutant; past it, it counts as killed")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--subprocess", action="store_true", help="a fresh interpreter per mutant (slower)")
    a = ap.parse_args()
    ops = set(a.ops.split(","))
    modules = (
        a.modules.split(",")
        if a.modules
        else sorted(
            str(p.relative_to(SRC))
            for d in ("trials", "codec")
            for p in (SRC / d).glob("*.py")
            if p.name != "__init__.py"
        )
    )
    work = Path(tempfile.mkdtemp(prefix="smd-mutate-"))
    try:
        src_root = work / "src"
        shutil.copytree(REPO / "src", src_root, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        if a.tests_from:
            repo_copy = work / "repo"
            repo_copy.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(REPO), "archive", a.tests_from, "tests"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(repo_copy)], input=archive, check=True)
            (repo_copy / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
            shared = REPO.parent / "shared"
            if shared.exists() and not (work / "shared").exists():
                (work / "shared").symlink_to(shared)
            tests_root = repo_copy / "tests"
        else:
            tests_root = REPO / "tests"
        mutants = [m for mod in modules for m in find_mutants(mod, ops)]
        equivalent = [m for m in mutants if m.equivalent]
        mutants = [m for m in mutants if not m.equivalent]
        for m in equivalent:
            print(f"equivalent, not run: {m.module}:{m.line} {m.op}: {m.what} ({m.equivalent})")
        if a.limit:
            mutants = mutants[: a.limit]
        deselect: dict[str, list[str]] = {}
        for args in {tuple(_tests_for(m.module)) for m in mutants}:
            deselect[args] = baseline_failures(src_root, tests_root, list(args))
            if deselect[args]:
                print(f"already failing without a mutant, deselected: {deselect[args]}")
        print(f"{len(mutants)} mutants in {len(modules)} modules, tests from {a.tests_from or 'the working tree'}")
        results: dict[str, list] = {"killed": [], "survived": [], "timeout": []}
        runner = None if a.subprocess else InProcess(src_root, tests_root)
        t0 = time.monotonic()
        for i, m in enumerate(mutants):
            target = src_root / "smdebug" / m.module
            original = target.read_text()
            target.write_text(apply(m, original))
            try:
                args = _tests_for(m.module)
                if runner is None:
                    res = run_tests(src_root, tests_root, args, a.timeout, deselect[tuple(args)])
                else:
                    with (
                        open(os.devnull, "w") as null,
                        contextlib.redirect_stdout(null),
                        contextlib.redirect_stderr(null),
                    ):
                        code = runner.run(args, deselect[tuple(args)], ["-x"], a.timeout)
                    res = "survived" if code in (0, 5) else "killed"
            finally:
                target.write_text(original)
            results[res].append(m)
            if a.v or res != "killed":
                print(f"[{i + 1}/{len(mutants)}] {res:8s} {m.module}:{m.line} {m.op}: {m.what}", flush=True)
        took = time.monotonic() - t0
        n = len(mutants)
        killed = len(results["killed"]) + len(results["timeout"])
        print(f"\nkilled {killed} of {n} mutants ({len(results['timeout'])} by timeout) in {took:.0f} s")
        by_op: dict[str, list[int]] = {}
        for res, ms in results.items():
            for m in ms:
                by_op.setdefault(m.op, [0, 0])[1] += 1
                if res != "survived":
                    by_op[m.op][0] += 1
        for op, (k, t) in sorted(by_op.items()):
            print(f"  {op:5s} killed {k} of {t}")
        pinned = [m for m in results["survived"] if m.op in ("swap", "drop")]
        return 1 if pinned else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

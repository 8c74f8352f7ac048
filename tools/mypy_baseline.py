"""mypy over src/ with a baseline that only shrinks (make test, make check).

The modules listed in pyproject.toml's strict override (the documented API) must have no error at
all. Every other error must be in tools/mypy-baseline.txt; one that is not fails (fix it), and so
does a baseline entry that no longer occurs (run ``python tools/mypy_baseline.py --update`` to drop
it: the baseline only shrinks; ``--update`` never adds an entry).

A baseline entry is ``path: message  [code]`` without the line number, so that edits elsewhere in a
file do not move it; the same entry may appear several times (one per occurrence).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy depends on tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:]+\.py):(?P<line>\d+): error: (?P<message>.*)$")


@dataclass
class Outcome:
    strict_errors: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.strict_errors or self.new or self.gone)


def strict_modules(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The modules of the override that sets ``disallow_untyped_defs`` (the strict profile)."""
    config = tomllib.loads(pyproject.read_text())
    for override in config["tool"]["mypy"].get("overrides", []):
        if override.get("disallow_untyped_defs"):
            return list(override["module"])
    raise SystemExit(f"{pyproject}: no [[tool.mypy.overrides]] with disallow_untyped_defs (the strict profile)")


def module_of(path: str) -> str:
    parts = Path(path).with_suffix("").parts
    if "src" in parts:
        parts = parts[parts.index("src") + 1 :]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_strict(module: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith(".*") and (module == pattern[:-2] or module.startswith(pattern[:-1])):
            return True
        if module == pattern:
            return True
    return False


def entries(mypy_output: str) -> list[tuple[str, str]]:
    """(path, ``path: message``) of each error line of mypy's output."""
    found = []
    for line in mypy_output.splitlines():
        match = ERROR.match(line.strip())
        if match:
            found.append((match["path"], f"{match['path']}: {match['message']}"))
    return found


def compare(mypy_output: str, baseline: list[str], strict: list[str]) -> Outcome:
    outcome = Outcome()
    current: Counter[str] = Counter()
    for path, entry in entries(mypy_output):
        if is_strict(module_of(path), strict):
            outcome.strict_errors.append(entry)
        else:
            current[entry] += 1
    base = Counter(line for line in baseline if line.strip())
    outcome.new = sorted((current - base).elements())
    outcome.gone = sorted((base - current).elements())
    return outcome


def run_mypy() -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"], cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not entries(proc.stdout)):
        raise SystemExit(f"mypy failed to run (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--update", action="store_true", help="drop the baseline entries that no longer occur (never adds one)"
    )
    args = parser.parse_args(argv)
    baseline = BASELINE.read_text().splitlines() if BASELINE.exists() else []
    outcome = compare(run_mypy(), baseline, strict_modules())
    if args.update and outcome.gone:
        kept = Counter(line for line in baseline if line.strip()) - Counter(outcome.gone)
        BASELINE.write_text("".join(f"{line}\n" for line in sorted(kept.elements())))
        print(f"{BASELINE.relative_to(ROOT)}: dropped {len(outcome.gone)} entries that no longer occur")
        outcome.gone = []
    for title, items in (
        ("errors in the strict (documented) modules", outcome.strict_errors),
        ("new errors, not in the baseline: fix them", outcome.new),
        ("baseline entries that no longer occur: run python tools/mypy_baseline.py --update", outcome.gone),
    ):
        if items:
            print(f"mypy: {len(items)} {title}")
            for item in items:
                print(f"  {item}")
    total = sum(1 for line in baseline if line.strip())
    print(
        f"mypy: {'ok' if outcome.ok else 'FAILED'} ({len(strict_modules())} strict module patterns, "
        f"{total - len(outcome.gone)} baseline entries)"
    )
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())

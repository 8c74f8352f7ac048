"""Every ```python block of README.md and docs/**/*.md runs (a renamed argument fails here).

The blocks of one page run in order in one namespace, in a fresh Python process whose working
folder is a temporary one (relative paths in the examples land there). A block fenced
```python notest (it needs a GPU, SageMaker, a long training or files that do not exist) is not
run: it is one skipped test each, so the summary counts them. A page whose blocks name s3:// paths
runs against the moto server (tests/s3server.py), with the buckets they name created first; a page
importing a framework is skipped where that framework is not installed (make check).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)$")
FRAMEWORKS = ("torch", "tensorflow", "keras", "xgboost", "mxnet", "jax")


@dataclass
class Block:
    page: str
    line: int
    code: str
    notest: bool

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The ```python blocks of a Markdown page (``python notest`` marks one not to run)."""
    page = str(path.relative_to(root))
    blocks, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        info, indent = match["info"].split(), len(match["indent"])
        start, i = i + 1, i + 1
        while i < len(lines) and not lines[i].strip().startswith("```"):
            i += 1
        if i >= len(lines):
            raise AssertionError(f"{page}:{start}: a code block is not closed")
        if info and info[0] == "python":
            if set(info[1:]) - {"notest"}:
                raise AssertionError(f"{page}:{start}: unknown fence options {info[1:]} (only 'notest')")
            code = "\n".join(line[indent:] for line in lines[start:i]) + "\n"
            blocks.append(Block(page, start, code, "notest" in info[1:]))
        i += 1
    return blocks


ALL = [b for p in pages() for b in python_blocks(p)]
RUN_PAGES = sorted({b.page for b in ALL if not b.notest})


def test_blocks_are_found():
    assert any(b.page == "README.md" for b in ALL)
    assert len(RUN_PAGES) >= 5, RUN_PAGES


@pytest.mark.parametrize("block", [b for b in ALL if b.notest], ids=lambda b: b.label)
def test_notest_block(block):
    pytest.skip(f"{block.label}: fenced ```python notest (not run)")


def test_python_block_finder(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n```python\nx = 1\n```\n\n  ```python notest\n  y = 2\n  ```\n```text\nz\n```\n")
    blocks = [(b.label, b.code, b.notest) for b in python_blocks(page, tmp_path)]
    assert blocks == [("page.md:2", "x = 1\n", False), ("page.md:6", "y = 2\n", True)]
    page.write_text("```python nottest\nx\n```\n")
    with pytest.raises(AssertionError, match="unknown fence options"):
        python_blocks(page, tmp_path)


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_examples_run(page, tmp_path, request):
    blocks = [b for b in ALL if b.page == page and not b.notest]
    code = "".join(b.code for b in blocks)
    for name in FRAMEWORKS:
        if re.search(rf"^\s*(import|from) {name}\b", code, re.M):
            pytest.importorskip(name, reason=f"{page} imports {name}")
    buckets = sorted(set(re.findall(r"s3://([a-z0-9][a-z0-9.-]+)", code)))
    if buckets:  # aws_env sets dummy credentials and AWS_ENDPOINT_URL_S3 (the moto server) in os.environ
        request.getfixturevalue("aws_env")
        client = request.getfixturevalue("boto_client")
        for name in buckets:
            try:
                client.create_bucket(Bucket=name)
            except client.exceptions.BucketAlreadyOwnedByYou:
                pass
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    script = tmp_path / "blocks.json"
    script.write_text(json.dumps([[b.label, b.code] for b in blocks]))
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "docs" / "run_blocks.py"), str(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{page}: a block failed\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    assert proc.stdout.rstrip().endswith("--- all blocks ran")

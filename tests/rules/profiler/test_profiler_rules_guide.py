"""docs/guide/profiler-rules.md: its runnable Python blocks run as they stand."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "profiler-rules.md"


def test_the_guide_blocks_run(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert blocks, "no runnable block in the guide"
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for code in blocks:
        exec(compile(code, str(GUIDE), "exec"), {"__name__": "__guide__"})
    assert "issues found" in capsys.readouterr().out

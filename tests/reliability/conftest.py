"""One warm training process (kill_trainer.py) for the whole session: it forks the trainers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TRAINER = Path(__file__).with_name("kill_trainer.py")
SRC = str(Path(__file__).resolve().parents[2] / "src")


class Trainer:
    def __init__(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen(
            [sys.executable, str(TRAINER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def start(self, **kwargs) -> int:
        """Fork a trainer (kill_trainer.train's arguments); returns its pid."""
        self.proc.stdin.write(json.dumps(kwargs) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.startswith("pid "), f"trainer process said {line!r}"
        return int(line.split()[1])

    def wait(self) -> int:
        """The waitpid status of the last trainer started."""
        line = self.proc.stdout.readline()
        assert line.startswith("exit "), f"trainer process said {line!r}"
        return int(line.split()[1])

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def trainer():
    t = Trainer()
    try:
        yield t
    finally:
        t.close()

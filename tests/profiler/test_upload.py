"""RemoteUpload: finished files go to the store under their relative paths; a failure keeps the
file, is tried again at close, and what is still being written at close is named."""

from __future__ import annotations

import logging
from pathlib import Path

from smdebug.exceptions import StorageError
from smdebug.profiler.recording.upload import RemoteUpload
from smdebug.storage.local import LocalStore


class FlakyStore(LocalStore):
    """A store whose first ``failures`` writes fail."""

    def __init__(self, root, failures: int):
        super().__init__(root)
        self.failures = failures

    def write(self, key, data):
        if self.failures > 0:
            self.failures -= 1
            raise StorageError(f"cannot write {key}: 503 Slow Down")
        super().write(key, data)


def _file(root: Path, rel: str, text: str) -> str:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


def test_a_failed_upload_is_kept_and_sent_again_at_close(tmp_path, caplog):
    staging, remote = tmp_path / "staging", tmp_path / "remote"
    up = RemoteUpload(FlakyStore(str(remote), failures=1), str(staging))
    up.submit(_file(staging, "framework/pevents/2026112514/1_0-vm_pythontimeline.json", "[]"))
    up.wait()
    assert (staging / "framework/pevents/2026112514/1_0-vm_pythontimeline.json").exists()  # kept
    assert "503 Slow Down" in caplog.text and "tried again at close" in caplog.text
    up.close(["framework/training_job_end.ts"])
    assert (remote / "framework/pevents/2026112514/1_0-vm_pythontimeline.json").read_text() == "[]"
    assert (remote / "framework/training_job_end.ts").exists()
    assert not staging.exists() and up.failed == {}


def test_files_still_being_written_at_close_are_named_and_kept(tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    staging, remote = tmp_path / "staging", tmp_path / "remote"
    up = RemoteUpload(LocalStore(str(remote)), str(staging))
    done = _file(staging, "framework/pevents/2026112514/2_7-vm_pythontimeline.json", "[]")
    busy = _file(staging, "framework/7-vm_pythontimeline.json.tmp", "[\n")
    up.close(["framework/training_job_end.ts"])  # a worker's timeline is still open
    assert (remote / "framework/pevents/2026112514/2_7-vm_pythontimeline.json").exists()
    assert not Path(done).exists() and Path(busy).exists()
    assert "still being written at close" in caplog.text and busy in caplog.text
    assert not (remote / "framework/7-vm_pythontimeline.json.tmp").exists()

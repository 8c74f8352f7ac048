"""The hook opens its output location once and passes the store down (the writer thread, each
step's FileWriter, the consolidator, the collections file): nothing reopens it from the path."""

from __future__ import annotations

import numpy as np

import smdebug.storage as storage
from smdebug.core.hook import BaseHook
from smdebug.core.save_config import SaveConfig
from smdebug.trials import create_trial


def test_the_hook_opens_its_out_dir_once(tmp_path, monkeypatch):
    opened = []
    real = storage.open_store

    def counting(url, *args, **kwargs):
        opened.append(str(url))
        return real(url, *args, **kwargs)

    monkeypatch.setattr(storage, "open_store", counting)
    out = str(tmp_path / "t")
    hook = BaseHook(out_dir=out, save_config=SaveConfig(save_interval=1))
    for _ in range(3):
        hook._begin_step()
        hook.save_tensor("a", np.arange(3.0))
    hook.close()
    assert [u for u in opened if u.rstrip("/") == out] == [out]
    monkeypatch.setattr(storage, "open_store", real)
    assert create_trial(out).tensor("a").steps() == [0, 1, 2]

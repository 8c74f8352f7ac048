"""Keras tests: TensorFlow on one thread, quiet, and no active hook left behind."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)


@pytest.fixture(autouse=True)
def _no_hook_left(monkeypatch):
    monkeypatch.delenv("SMDEBUG_PROPAGATE_ERRORS", raising=False)
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    yield
    from smdebug.tensorflow import del_hook

    del_hook()

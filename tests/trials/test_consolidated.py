"""Consolidated index objects (``_smdebug/index/``): the same answers as the per-step index files,
through the oracle, for 1.0.34's fixtures and for trials our writer and hook write; fallbacks when
an object is missing or damaged; a running job; the CLI. Local and on the moto server."""

from __future__ import annotations

import hashlib
import logging
import sys

import numpy as np
import pytest

from smdebug.codec.consolidated import PREFIX_BYTES, head_size
from smdebug.core.locations import CONSOLIDATED_PREFIX, parse_consolidated_key, parse_heads_key
from smdebug.core.modes import ModeKeys
from smdebug.core.output.consolidate import BucketConsolidator
from smdebug.core.writer import FileWriter
from smdebug.trials import consolidate, create_trial
from smdebug.trials import consolidated as consolidated_reader
from smdtest import FIXTURES, ORACLE, run_json
from trialgen import end_job, value, workers, write_collections, write_step

FIXTURE_TRIALS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
TENSORS = ["a/w", "b/w", "loss"]


def write_ours(root, steps, n_workers=2, close=True, ended=True):
    """Steps written by FileWriter with each worker's BucketConsolidator (as the hook's writer
    does); modes alternate TRAIN/EVAL, and a reduction and a shape ride along."""
    ws = workers(n_workers)
    write_collections(root, ws)
    store = root.store
    cons = {w: BucketConsolidator(store, w) for w in ws}
    for s in steps:
        mode = ModeKeys.TRAIN if s % 3 else ModeKeys.EVAL
        for w in ws:
            with FileWriter(trial_dir=root.url, step=s, worker=w, store=store, consolidator=cons[w]) as fw:
                for name in TENSORS:
                    fw.write_tensor(value(name, s, w), name, mode=mode, mode_step=s // 3)
                fw.write_tensor(
                    np.array([float(s)], np.float32), "smdebug/reductions/max/a/w", mode=mode, mode_step=s // 3
                )
                fw.write_shape("a/w", (2, 3), mode=mode, mode_step=s // 3)
    if close:
        for c in cons.values():
            c.close()
    if ended:
        end_job(root)
    return ws


def oracle(url, *rng):
    return run_json(sys.executable, ORACLE, url, *rng)


def trial_objects(root) -> dict:
    """Every object of the trial but ours under _smdebug/, with a digest of its bytes."""
    return {k: hashlib.sha1(root.read(k)).hexdigest() for k in root.keys() if not k.startswith("_smdebug/")}


def objects(root) -> list:
    """(bucket, worker) of each consolidated object."""
    return sorted(p[:2] for p in map(parse_consolidated_key, root.keys(CONSOLIDATED_PREFIX)) if p)


def object_key(root, bucket, worker) -> str:
    (key,) = [k for k in root.keys(CONSOLIDATED_PREFIX) if (parse_consolidated_key(k) or ())[:2] == (bucket, worker)]
    return key


def heads_keys(root) -> list:
    return [k for k in root.keys(CONSOLIDATED_PREFIX) if parse_heads_key(k)]


def drop_consolidated(root) -> None:
    for k in root.keys(CONSOLIDATED_PREFIX):
        root.delete(k)


def upload_fixture(root, name) -> None:
    folder = FIXTURES / name
    for p in folder.rglob("*"):
        if p.is_file():
            root.write(p.relative_to(folder).as_posix(), p.read_bytes())


# ------------------------------------------------------------------ same answers through the oracle
@pytest.mark.parametrize("name", FIXTURE_TRIALS)
def test_fixture_consolidated_reads_like_per_step(name, root):
    upload_fixture(root, name)
    before = trial_objects(root)
    report = consolidate(root.url, include_incomplete=True)
    assert report.written and not report.skipped
    assert trial_objects(root) == before  # consolidate only adds under _smdebug/
    tr = create_trial(root.url)
    assert tr._coverage.chunks == len(report.written) and not tr._coverage.fallbacks
    rngs = [()] + ([("2", "7")] if name == "multi_worker_modes" else [])
    cons = [oracle(root.url, *r) for r in rngs]
    drop_consolidated(root)
    per_step = [oracle(root.url, *r) for r in rngs]
    assert cons[0]["steps"] and cons == per_step


def test_hook_trial_consolidated_reads_like_per_step(root):
    torch = pytest.importorskip("torch")
    import smdebug.pytorch as smd

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    loss_fn = torch.nn.MSELoss()
    hook = smd.Hook(
        out_dir=root.url,
        save_config=smd.SaveConfig(save_interval=40),
        include_collections=["weights", "gradients", "losses"],
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4), torch.randn(8, 3)
    for _ in range(2041):  # saved steps 0, 40, ..., 2040: three index buckets
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    assert objects(root) == [(b, "worker_0") for b in range(3)] and len(heads_keys(root)) == 1
    tr = create_trial(root.url)
    assert tr._coverage.chunks == 3 and len(tr.steps()) == 52
    cons = oracle(root.url)
    drop_consolidated(root)
    assert cons["steps"] == list(range(0, 2041, 40)) and cons == oracle(root.url)


# ------------------------------------------------------------------ a running job
def test_running_job_newest_bucket_not_consolidated_shows_every_step(root):
    ws = write_ours(root, range(0, 1500, 25), close=False, ended=False)
    assert objects(root) == [(0, w) for w in ws]
    tr = create_trial(root.url)
    assert tr._coverage.covered == {(0, w) for w in ws}
    assert tr.steps() == list(range(0, 1500, 25))
    np.testing.assert_array_equal(tr.tensor("b/w").value(1475, worker="worker_1"), value("b/w", 1475, "worker_1"))
    np.testing.assert_array_equal(tr.tensor("b/w").value(975, worker="worker_1"), value("b/w", 975, "worker_1"))
    write_ours(root, range(1500, 2100, 25), close=False, ended=False)  # bucket 1 completes meanwhile
    assert tr.steps() == list(range(0, 2100, 25))
    assert tr.tensor("a/w").steps(mode=ModeKeys.EVAL) == [s // 3 for s in range(0, 2100, 25) if s % 3 == 0]


# ------------------------------------------------------------------ objects made before their bucket changed
@pytest.fixture
def proxy_if_s3(root, request):
    """The counting S3 proxy on the s3 backend (stores opened after it go through it), else None."""
    return request.getfixturevalue("proxy") if root.is_s3 else None


def test_steps_written_after_consolidate_are_read(root, caplog):
    """`smdebug consolidate --include-incomplete` on a live job, which then goes on in the same
    bucket (here without a consolidator of its own, as smdebug 1.0.34 or a crashed job): the steps
    written later are read from their per-step files, for a trial opened before and after."""
    from smdebug.cli import main

    ws = workers(2)
    write_collections(root, ws)
    for s in range(19):
        for w in ws:
            write_step(root, s, w, TENSORS)
    assert main(["consolidate", root.url, "--include-incomplete"]) == 0
    assert objects(root) == [(0, w) for w in ws]
    live = create_trial(root.url)
    assert live.steps() == list(range(19)) and live._coverage.chunks == 2
    for s in range(19, 60):
        for w in ws:
            write_step(root, s, w, TENSORS)
    end_job(root)
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        for tr in (live, create_trial(root.url)):
            assert tr.steps() == list(range(60))
            assert tr._coverage.chunks == 2  # the object still serves the steps it names
            for s in (5, 18, 19, 45, 59):
                np.testing.assert_array_equal(tr.tensor("b/w").value(s, worker="worker_1"), value("b/w", s, "worker_1"))
            assert sorted(tr.tensor("loss").values(worker="worker_0")) == list(range(60))
    assert not caplog.records  # nothing was wrong: the object is current for the steps it names
    assert create_trial(root.url, range_steps=(10, 30)).steps() == list(range(10, 30))


def test_steps_added_to_an_older_consolidated_bucket_are_read(root, proxy_if_s3):
    """Steps written into a bucket below the newest after its object was made (a rerun by a writer
    that keeps no objects): the bucket's own listing after its object's last step finds them; one
    LIST per such bucket on S3."""
    ws = write_ours(root, range(0, 2100, 50))  # buckets 0, 1, 2 consolidated by the writer
    for s in (960, 990):  # after bucket 0's last step, 950
        for w in ws:
            write_step(root, s, w, TENSORS)
    steps = sorted([*range(0, 2100, 50), 960, 990])
    if proxy_if_s3 is not None:
        proxy_if_s3.reset()
    tr = create_trial(root.url)
    if proxy_if_s3 is not None:  # collections/, _smdebug/index/, index/ folders, buckets 0 and 1, index/ after
        assert proxy_if_s3.snapshot()["LIST"] == 6
    assert tr.steps() == steps and tr._coverage.chunks == 6
    for w in ws:
        np.testing.assert_array_equal(tr.tensor("a/w").value(990, worker=w), value("a/w", 990, w))
        np.testing.assert_array_equal(tr.tensor("a/w").value(950, worker=w), value("a/w", 950, w))
    assert create_trial(root.url, range_steps=(900, 1100)).steps() == [s for s in steps if 900 <= s < 1100]


def test_hook_writer_replaces_an_object_consolidate_wrote_mid_bucket(root, caplog):
    """The hook's writer (BucketConsolidator) goes on in a bucket that `smdebug consolidate` covered
    part of: when it completes the bucket its own object replaces that one (no two objects of one
    bucket, no warning), and the trial reads every step from objects."""
    ws = workers(2)
    write_collections(root, ws)
    store = root.store
    cons = {w: BucketConsolidator(store, w) for w in ws}

    def steps(rng):
        for s in rng:
            for w in ws:
                with FileWriter(trial_dir=root.url, step=s, worker=w, store=store, consolidator=cons[w]) as fw:
                    for name in TENSORS:
                        fw.write_tensor(value(name, s, w), name)

    steps(range(0, 400, 20))
    consolidate(root.url, include_incomplete=True)
    steps(range(400, 1000, 20))
    for c in cons.values():
        c.close()
    end_job(root)
    assert objects(root) == [(0, w) for w in ws]
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        tr = create_trial(root.url)
        assert tr.steps() == list(range(0, 1000, 20))
        assert tr._coverage.chunks == 2 and not tr._coverage.extra
        np.testing.assert_array_equal(tr.tensor("loss").value(900, worker="worker_1"), value("loss", 900, "worker_1"))
    assert not caplog.records


def foreign_rewrite(fw: FileWriter) -> FileWriter:
    """A writer that replaces a step's files as 1.0.34's does (ours refuses to: core/output/writer.py), so
    the step's old files go first."""
    for key in (fw._event_key, fw._index_key):
        if fw._store.exists(key):
            fw._store.delete(key)
    return fw


def test_step_rewritten_after_consolidation_reads_its_new_value(root, caplog):
    """A rerun into the same folder rewrites steps of a consolidated bucket with a writer that keeps
    no objects (smdebug 1.0.34, or FileWriter alone): same index keys, other records. The first
    read that fails to verify finds the object stale against the per-step file; the bucket is then
    read from the per-step files (one warning) and every value is the new one."""
    write_ours(root, range(0, 1200, 40), n_workers=1)
    new = {}
    store = root.store
    for s in range(1000, 1200, 40):  # bucket 1, the same tensors and modes, other values and sizes
        mode = ModeKeys.TRAIN if s % 3 else ModeKeys.EVAL
        with foreign_rewrite(FileWriter(trial_dir=root.url, step=s, worker="worker_0", store=store)) as fw:
            for name in TENSORS:
                new[(name, s)] = np.full((4, 5), s + 0.5, np.float32)
                fw.write_tensor(new[(name, s)], name, mode=mode, mode_step=s // 3)
            fw.write_tensor(np.array([-1.0], np.float32), "smdebug/reductions/max/a/w", mode=mode, mode_step=s // 3)
            fw.write_shape("a/w", (4, 5), mode=mode, mode_step=s // 3)
    assert objects(root) == [(0, "worker_0"), (1, "worker_0")]
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        tr = create_trial(root.url)
        assert tr.steps() == list(range(0, 1200, 40))
        got = tr.tensor("b/w").values()
        for s in range(0, 1200, 40):
            np.testing.assert_array_equal(got[s], new.get(("b/w", s), value("b/w", s, "worker_0")))
        np.testing.assert_array_equal(tr.tensor("loss").value(1080), new[("loss", 1080)])
        assert tr.tensor("a/w").reduction_value(1080, "max") == -1.0
        assert tr.tensor("a/w").reduction_value(960, "max") == 960.0  # bucket 0's object still serves
    (warned,) = [r.getMessage() for r in caplog.records]
    assert "was rewritten after" in warned and "000000001/worker_0." in warned


def test_rules_read_a_step_rewritten_after_consolidation(root):
    """The rules' two batched readers (builtin rules' StepReader, a custom rule's req_tensors) find
    the object stale the same way: a NaN written by the rerun at step 1080 is seen."""
    from smdebug.rules.builtin import ExplodingTensor
    from smdebug.rules.rule import Rule
    from smdebug.rules.rule_invoker import invoke_rule

    write_ours(root, range(0, 1200, 40), n_workers=1)
    mode = ModeKeys.TRAIN
    with foreign_rewrite(FileWriter(trial_dir=root.url, step=1080, worker="worker_0", store=root.store)) as fw:
        for name in TENSORS:
            fw.write_tensor(
                np.full((5, 7), np.nan if name == "loss" else 1.0, np.float32), name, mode=mode, mode_step=360
            )
        fw.write_tensor(np.array([1.0], np.float32), "smdebug/reductions/max/a/w", mode=mode, mode_step=360)
        fw.write_shape("a/w", (5, 7), mode=mode, mode_step=360)

    class LossIsNaN(Rule):
        def set_required_tensors(self, step):
            self.req_tensors.add("loss", steps=[step])

        def invoke_at_step(self, step):
            return bool(np.isnan(self.base_trial.tensor("loss").value(step)).any())

    for rule in (ExplodingTensor(create_trial(root.url), tensor_regex="loss"), LossIsNaN(create_trial(root.url))):
        run = invoke_rule(rule)
        assert run.fired == [1080], (type(rule).__name__, run)


# ------------------------------------------------------------------ damaged objects fall back
@pytest.fixture(scope="module")
def damaged_trial(module_root):
    root = module_root / "damage"
    write_ours(root, range(0, 2400, 40))
    return root


DAMAGES = ["missing", "garbage", "truncated_head", "truncated_entries", "flipped_head", "flipped_entries", "stale"]


def _damage(root, key, kind, blob) -> None:
    end = head_size(blob, key)
    if kind == "missing":
        root.delete(key)
    elif kind == "garbage":
        root.write(key, b"not an index")
    elif kind == "truncated_head":
        root.write(key, blob[: end - 5])
    elif kind == "truncated_entries":
        root.write(key, blob[:-5])
    elif kind == "flipped_head":
        root.flip_byte(key, PREFIX_BYTES + 3)
    elif kind == "flipped_entries":
        root.flip_byte(key, len(blob) - 3)
    elif kind == "stale":  # another worker's object under this key
        root.write(key, root.read(object_key(root, 1, "worker_0")))
    elif kind == "heads_flipped":  # the heads object of worker_1, not the object
        (hkey,) = [k for k in heads_keys(root) if k.endswith("worker_1.cidh")]
        root.flip_byte(hkey, 40)


# how the heads reach the reader: from the heads objects; from each object's first HEAD_READ
# bytes (these objects are small: whole); from a 40-byte first read, the entries read later (lazy)
READS = {"heads_object": None, "whole": consolidated_reader.HEAD_READ, "lazy": 40}


@pytest.mark.parametrize("kind, reads", [(k, r) for k in DAMAGES for r in READS] + [("heads_flipped", "heads_object")])
def test_damaged_object_falls_back_without_losing_a_step(damaged_trial, kind, reads, monkeypatch, caplog):
    root = damaged_trial
    saved_heads = {k: root.read(k) for k in heads_keys(root)}
    if READS[reads] is not None:
        monkeypatch.setattr(consolidated_reader, "HEAD_READ", READS[reads])
        for k in saved_heads:
            root.delete(k)
    key = object_key(root, 1, "worker_1")
    blob = root.read(key)
    _damage(root, key, kind, blob)
    try:
        with caplog.at_level(logging.DEBUG, logger="smdebug"):
            tr = create_trial(root.url)
            steps = list(range(0, 2400, 40))
            assert tr.steps() == steps
            assert tr.workers() == ["worker_0", "worker_1"]
            for name in TENSORS:
                for w in ("worker_0", "worker_1"):
                    got = tr.tensor(name).values(worker=w)
                    assert sorted(got) == steps
                    for s in steps:
                        np.testing.assert_array_equal(got[s], value(name, s, w))
            assert tr.tensor("a/w").reduction_value(1040, "max", worker="worker_1") == 1040.0
            assert tr.tensor("a/w").shape(1040, worker="worker_1") == (2, 3)
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        if kind == "missing" or (kind == "flipped_head" and reads == "heads_object"):
            assert not warned  # (the heads object holds a sound copy of that head: nothing to fall back from)
        else:
            assert len(warned) == 1 and "per-step index files instead" in warned[0].getMessage(), warned
            assert ("/worker_1.cidh" if kind == "heads_flipped" else "000000001/worker_1.") in warned[0].getMessage()
    finally:
        root.write(key, blob)
        for k, v in saved_heads.items():
            root.write(k, v)


# ------------------------------------------------------------------ integrity of saved values
@pytest.mark.parametrize("with_objects", [True, False], ids=["consolidated", "per_step"])
def test_flipped_payload_byte_raises_naming_file_and_step(root, with_objects):
    write_ours(root, [0, 1, 2], n_workers=1)
    if not with_objects:
        drop_consolidated(root)
    ekey = "events/000000000001/000000000001_worker_0.tfevents"
    content = value("b/w", 1, "worker_0").tobytes()
    data = root.read(ekey)
    at = data.index(content) + 5  # a byte of the saved array, inside the record's payload
    root.flip_byte(ekey, at)
    tr = create_trial(root.url)
    from smdebug.exceptions import EventFileCorrupt

    with pytest.raises(EventFileCorrupt) as err:
        tr.tensor("b/w").value(1)
    msg = str(err.value)
    assert root.describe(ekey) in msg and "step 1" in msg and "'b/w'" in msg and "CRC32C" in msg
    with pytest.raises(EventFileCorrupt):
        tr.tensor("b/w").values()
    for name in TENSORS:
        for s in (0, 1, 2):
            if (name, s) != ("b/w", 1):
                np.testing.assert_array_equal(tr.tensor(name).value(s), value(name, s, "worker_0"))


# ------------------------------------------------------------------ consolidate() and the CLI
def test_cli_consolidates_a_trial_written_without_objects(root, capsys):
    from smdebug.cli import main

    write_ours(root, range(0, 2500, 100), close=False, ended=False)  # buckets 0, 1 consolidated by the writer
    drop_consolidated(root)
    before = trial_objects(root)
    assert main(["consolidate", root.url]) == 0
    out = capsys.readouterr().out
    assert "into 4 objects" in out and "skipped bucket 2 of worker_0" in out  # the job has not ended
    assert trial_objects(root) == before
    end_job(root)
    assert main(["consolidate", root.url]) == 0
    assert "into 6 objects" in capsys.readouterr().out
    tr = create_trial(root.url)
    assert tr._coverage.chunks == 6 and tr.steps() == list(range(0, 2500, 100))

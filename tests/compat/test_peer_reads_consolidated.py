"""smdebug 1.0.34 reads a trial of ours that carries payload CRCs in its index entries and
consolidated index objects under _smdebug/: the same answers as ours, which read the objects."""

from __future__ import annotations

import json

from test_peer_reads_ours import STEPS, WORKERS, _known_defect, write_trial

from smdebug.trials import consolidate, create_trial
from smdtest import ORACLE, flatten_oracle, run_json


def test_peer_reads_our_trial_with_crcs_and_consolidated_objects(tmp_path, peer, ours_python):
    trial = tmp_path / "ours"
    write_trial(trial)
    entry = json.loads((trial / "index/000000000/000000000001_worker_0.json").read_bytes())["tensor_payload"][0]
    assert isinstance(entry["crc32c"], int)  # the extra key 1.0.34 does not know
    report = consolidate(str(trial))
    assert len(report.written) == 3 * len(WORKERS)  # buckets 0, 1 and 12
    assert create_trial(str(trial))._coverage.chunks == len(report.written)
    theirs = run_json(peer, ORACLE, trial)
    ours = run_json(ours_python, ORACLE, trial)
    assert theirs["steps"] == ours["steps"] == STEPS
    t_flat, o_flat = flatten_oracle(theirs), flatten_oracle(ours)
    assert set(t_flat) == set(o_flat)
    mismatches = [k for k in t_flat if t_flat[k] != o_flat[k] and not _known_defect(k, o_flat[k], t_flat[k])]
    assert not mismatches, [(k, o_flat[k], t_flat[k]) for k in mismatches[:10]]
    v = theirs["tensors"]["t_float32"]["per_step"]["12000"]["value@worker_1"]
    assert v["shape"] == [3, 4] and v == ours["tensors"]["t_float32"]["per_step"]["12000"]["value@worker_1"]

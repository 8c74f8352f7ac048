"""What the payload CRC32C in index entries costs: the writer computing it, the reader checking it.

Writer: FileWriter writes STEPS steps of TENSORS tensors, with the CRCs computed (as shipped) and
with the computation stubbed out (the same index, zeros in place of the CRCs). Reader: one
tensor's values() over all steps and every tensor at one step, on the trial as written (CRCs
checked) and on a copy whose index entries lack the key (nothing to check). Two tensor sizes:
4 float32 (metadata-bound) and 1 MiB (bytes-bound).

usage: python bench/bench_crc.py [--steps 200] [--tensors 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402

import smdebug.core.writer as writer_mod  # noqa: E402
from smdebug.core.collection_manager import CollectionManager  # noqa: E402
from smdebug.core.modes import ModeKeys  # noqa: E402
from smdebug.core.writer import FileWriter  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


def write(folder: Path, steps: int, tensors: int, size: int) -> float:
    cm = CollectionManager()
    cm.add("default")
    cm.get("default").include(".")
    cm.export(str(folder), "worker_0_collections.json")
    arrays = [np.full(size, t, np.float32) for t in range(tensors)]
    t0 = time.perf_counter()
    for s in range(steps):
        with FileWriter(str(folder), step=s) as fw:
            fw.write_tensors([(f"t{t}", a, None) for t, a in enumerate(arrays)], mode=ModeKeys.TRAIN, mode_step=s)
    dt = time.perf_counter() - t0
    (folder / "training_job_end.ts").write_bytes(b"")
    return dt


def strip_crcs(folder: Path) -> None:
    for p in (folder / "index").rglob("*.json"):
        d = json.loads(p.read_bytes())
        for e in d["tensor_payload"]:
            e.pop("crc32c", None)
        p.write_text(json.dumps(d))


def read(folder: Path, steps: int, tensors: int) -> float:
    tr = create_trial(str(folder))
    t0 = time.perf_counter()
    tr.tensor("t1").values()
    for t in range(tensors):
        tr.tensor(f"t{t}").value(steps // 2)
    return time.perf_counter() - t0


def direct_cost(size: int, tensors: int) -> str:
    """The writer's payload_crcs over one step's chunks, and the reader's check of one record."""
    import timeit

    from smdebug.codec.crc import crc32c
    from smdebug.codec.event import encode_step_records, mode_metadata
    from smdebug.codec.record_crc import payload_crcs
    from smdebug.codec.tfrecord import unframe

    arrays = [np.full(size, t, np.float32) for t in range(tensors)]
    chunks, lengths = encode_step_records(
        [f"t{t}" for t in range(tensors)], arrays, 5, mode_metadata(ModeKeys.TRAIN, 5)
    )
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    n = 200 if size == 4 else 20
    w = min(timeit.repeat(lambda: payload_crcs(chunks, starts, lengths), number=n, repeat=3)) / n
    payload, _ = unframe(b"".join(bytes(c) for c in chunks)[: lengths[0]])
    r = min(timeit.repeat(lambda: crc32c(payload), number=n, repeat=3)) / n
    return f"writer {w * 1e6:.0f} us/step ({w / tensors * 1e6:.1f} us/record), reader {r * 1e6:.1f} us/record"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--tensors", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="smdebug-crc-"))
    real = writer_mod.payload_crcs
    try:
        for size, label in ((4, "4 floats"), (256 * 1024, "1 MiB")):
            steps = args.steps if size == 4 else max(args.steps // 10, 5)
            tensors = args.tensors if size == 4 else 10
            w = {"with": [], "without": []}
            r = {"with": [], "without": []}
            for i in range(args.repeat):
                for mode in ("without", "with"):
                    folder = base / f"{size}_{mode}_{i}"
                    writer_mod.payload_crcs = real if mode == "with" else (lambda c, s, n: [0] * len(s))
                    try:
                        w[mode].append(write(folder, steps, tensors, size) / steps)
                    finally:
                        writer_mod.payload_crcs = real
                    if mode == "without":
                        strip_crcs(folder)
                    r[mode].append(read(folder, steps, tensors))
                    shutil.rmtree(folder)
            mw, mo = min(w["with"]), min(w["without"])
            rw, ro = min(r["with"]), min(r["without"])
            print(
                f"{label:>8} x {tensors} tensors, {steps} steps: writer {mo * 1e3:.2f} -> {mw * 1e3:.2f} ms/step "
                f"({(mw / mo - 1) * 100:+.1f}%), reader {ro * 1e3:.1f} -> {rw * 1e3:.1f} ms "
                f"({(rw / ro - 1) * 100:+.1f}%) [without -> with CRC, best of {args.repeat}]",
                flush=True,
            )
            print(f"{'':>8}   the CRC work alone: {direct_cost(size, tensors)}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

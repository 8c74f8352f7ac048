"""Scale benchmark: opening trials of 1,000 / 10,000 / 100,000 steps x 8 workers x 50 tensors,
with and without consolidated index objects, locally and on a moto server (127.0.0.1).

The trials are written by our FileWriter (4 float32 scalars per tensor, every step saved) with
each worker's BucketConsolidator, as the hook's writer does. Writing 800,000 per-step files for
the 100,000-step trial would take long and ~6 GB, so above --per-step-max steps only bucket 0
(steps 0-999) is written step by step and the consolidated objects of the other 99 buckets are
made from bucket 0's with the steps shifted (the same bytes the writer would make, but for the
record offsets, which depend on the step's varint size and are never read there).

Each measurement runs in a fresh process: open+list = create_trial + steps() + tensor_names() +
workers(); then one value (random access: step 500) and, for ours, every bucket's entries read
(all 40 million entry locations in memory) to measure bytes per index entry. Requests are counted
by the proxy of tests/s3server.py in a second run (timings are taken straight against moto; the
per-step S3 trial is timed through the proxy, its requests being S x W GETs). smdebug 1.0.34 (SMDEBUG_PEER_PYTHON) runs the per-step
trials with --peer-timeout seconds each.

usage: python bench/bench_scale.py [--sizes 1000 10000 100000] [--dir D] [--keep] [--no-s3]
           [--per-step-max 10000] [--s3-per-step-max 1000] [--peer-timeout 600]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
WORKERS, TENSORS = 8, 50


# ------------------------------------------------------------------ child: one measurement
def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(url: str, entries: bool) -> None:
    import logging

    logging.disable(logging.WARNING)
    import numpy  # noqa: F401  (imported before the baseline)

    from smdebug.trials import create_trial

    base = _rss()
    t0 = time.perf_counter()
    tr = create_trial(url)
    steps, names, workers = tr.steps(), tr.tensor_names(), tr.workers()
    out = {
        "open_list_s": time.perf_counter() - t0,
        "steps": len(steps),
        "tensors": len(names),
        "workers": len(workers),
        "rss_open_mb": (_rss() - base) / 2**20,
    }
    t0 = time.perf_counter()
    tr.tensor(names[0]).value(500, worker=workers[-1])
    out["value_s"] = time.perf_counter() - t0
    if entries and hasattr(tr, "_index") and tr._index.chunks:
        t0 = time.perf_counter()
        for c in tr._index.chunks:
            c._ready()
        out["all_entries_s"] = time.perf_counter() - t0
        n = len(steps) * len(workers) * len(names)
        out["entries"] = n
        out["rss_all_mb"] = (_rss() - base) / 2**20
        out["bytes_per_entry"] = (_rss() - base) / n
        out["array_bytes_per_entry"] = tr._index.nbytes() / n
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


# ------------------------------------------------------------------ writing the trials
def write_trial(folder: Path, steps: int, per_step_max: int) -> dict:
    sys.path.insert(0, str(REPO / "src"))
    import numpy as np

    from smdebug.codec.consolidated import (
        EVENT_STANDARD,
        FileIndex,
        decode_entries,
        decode_head,
        encode_consolidated,
        encode_heads,
        head_size,
    )
    from smdebug.codec.crc import crc32c
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.locations import HEADS_GROUP, consolidated_bucket_prefix, consolidated_key, heads_key
    from smdebug.core.modes import ModeKeys
    from smdebug.core.output.consolidate import BucketConsolidator
    from smdebug.core.writer import FileWriter
    from smdebug.storage import open_store

    t0 = time.perf_counter()
    cm = CollectionManager()
    cm.add("default")
    cm.get("default").include(".")
    cm.set_num_workers(WORKERS)
    store = open_store(str(folder))
    names = [f"layer{t // 2}/{'weight' if t % 2 == 0 else 'bias'}" for t in range(TENSORS)]
    real = steps if steps <= per_step_max else 1000
    for w in range(WORKERS):
        worker = f"worker_{w}"
        cm.export(str(folder), f"{worker}_collections.json")
        cons = BucketConsolidator(store, worker)
        for s in range(real):
            base = np.arange(4, dtype=np.float32) + s
            recs = []
            for t, name in enumerate(names):
                recs.append((name, base + t, None))
            fw = FileWriter(str(folder), worker=worker, step=s, store=store, consolidator=cons)
            fw.write_tensors(recs, mode=ModeKeys.TRAIN, mode_step=s)
            fw.close()
        cons.close()
    for w in range(WORKERS) if steps > real else ():
        worker = f"worker_{w}"
        (key0,) = [k for k in store.list(consolidated_bucket_prefix(0)) if f"/{worker}." in k]
        blob = store.read(key0)
        heads = {0: blob[: head_size(blob, key0)]}
        head = decode_head(blob, "bucket 0")
        ent = decode_entries(head, blob[head.entries_offset :], "bucket 0")
        tmpl = []
        for i in range(len(head.steps)):
            a, b = int(ent.offsets[i]), int(ent.offsets[i + 1])
            tmpl.append(
                (
                    int(head.steps[i]),
                    int(head.mode_steps[i]),
                    head.layouts[int(head.layout_ids[i])].tags,
                    ent.starts[a:b].tolist(),
                    ent.lengths[a:b].tolist(),
                    ent.crcs[a:b].tolist(),
                )
            )
        for bucket in range(1, steps // 1000):
            files = [
                FileIndex(
                    s + 1000 * bucket, ModeKeys.TRAIN.value, ms + 1000 * bucket, EVENT_STANDARD, tags, st, ln, cr, ()
                )
                for s, ms, tags, st, ln, cr in tmpl
            ]
            obj = encode_consolidated(worker, bucket, files)
            heads[bucket] = obj[: head_size(obj, bucket)]
            store.write(consolidated_key(bucket, worker, crc32c(heads[bucket])), obj)
        for g in sorted({b // HEADS_GROUP for b in heads}):
            store.write(heads_key(g, worker), encode_heads([heads[b] for b in sorted(heads) if b // HEADS_GROUP == g]))
    store.write("training_job_end.ts", b"")
    return {"write_s": time.perf_counter() - t0, "per_step_steps": real}


# ------------------------------------------------------------------ S3 side
def upload(client, bucket: str, folder: Path, prefix: str, with_consolidated: bool, index: bool) -> int:
    from concurrent.futures import ThreadPoolExecutor

    keys = []
    for p in folder.rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(folder).as_posix()
        top = rel.split("/", 1)[0]
        if top == "_smdebug" and not with_consolidated:
            continue
        if top == "index" and not index and not rel.endswith(tuple(f"999_worker_{w}.json" for w in range(WORKERS))):
            continue  # consolidated: only each bucket's last index files, so that index/ has its folders
        if top == "events" and "/000000000500/" not in rel:  # only the step the value read needs
            continue
        keys.append((p, f"{prefix}/{rel}"))
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda pk: client.put_object(Bucket=bucket, Key=pk[1], Body=pk[0].read_bytes()), keys))
    return len(keys)


def run_child(python: str, url: str, env: dict, timeout: float, entries: bool = True) -> dict | None:
    env = dict(os.environ, **env)
    if python == sys.executable:
        env["PYTHONPATH"] = str(REPO / "src")
    else:
        env.pop("PYTHONPATH", None)
    args = [python, str(Path(__file__).resolve()), "child", url] + (["--entries"] if entries else [])
    try:
        out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        raise SystemExit(f"{args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(r: dict | None, reqs: dict | None = None, timeout: float = 0) -> str:
    if r is None:
        return f"did not finish in {timeout:.0f} s"
    s = f"open+list {r['open_list_s']:7.2f} s, value {r['value_s'] * 1000:6.1f} ms, peak RSS {r['peak_rss_mb']:6.0f} MB"
    if "bytes_per_entry" in r:
        s += (
            f", all {r['entries'] / 1e6:.1f} M entries loaded in {r['all_entries_s']:.1f} s:"
            f" {r['bytes_per_entry']:.1f} B/entry (arrays {r['array_bytes_per_entry']:.1f})"
        )
    if reqs is not None:
        s += f", requests {sum(reqs.values())} {dict(sorted(reqs.items()))}"
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the written trials (default: delete them)")
    ap.add_argument("--no-s3", action="store_true")
    ap.add_argument("--per-step-max", type=int, default=10000, help="largest size written step by step")
    ap.add_argument("--s3-per-step-max", type=int, default=1000, help="largest per-step trial uploaded to moto")
    ap.add_argument("--peer-timeout", type=float, default=600)
    args = ap.parse_args()
    peer = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    base = Path(args.dir or tempfile.mkdtemp(prefix="smdebug-scale-"))
    sys.path.insert(0, str(REPO / "tests"))
    moto = proxy = client = None
    if not args.no_s3:
        import boto3

        from s3server import MotoServer, S3Proxy

        os.environ.update(AWS)
        moto = MotoServer()
        moto.wait_ready()
        proxy = S3Proxy(moto.url)
        client = boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1")
        client.create_bucket(Bucket="scale")
    # timings straight against moto; requests counted in a second run through the counting proxy
    s3env = dict(AWS, AWS_ENDPOINT_URL_S3=moto.url, AWS_ENDPOINT_URL=moto.url) if moto else {}
    s3proxied = dict(AWS, AWS_ENDPOINT_URL_S3=proxy.url, AWS_ENDPOINT_URL=proxy.url) if proxy else {}
    results = {}
    try:
        for steps in args.sizes:
            folder = base / f"trial_{steps}"
            shutil.rmtree(folder, ignore_errors=True)
            w = write_trial(folder, steps, args.per_step_max)
            print(
                f"\n== {steps} steps x {WORKERS} workers x {TENSORS} tensors (written in {w['write_s']:.0f} s;"
                f" per-step files for {w['per_step_steps']} steps)",
                flush=True,
            )
            res = results[steps] = {"write": w}
            full = w["per_step_steps"] == steps
            r = res["local consolidated"] = run_child(sys.executable, str(folder), {}, 600)
            print(f"  local, consolidated:     {fmt(r)}", flush=True)
            if full:
                off = folder / "_smdebug.off"
                os.rename(folder / "_smdebug", off)
                try:
                    r = res["local per-step"] = run_child(sys.executable, str(folder), {}, 600, entries=False)
                    print(f"  local, per-step:         {fmt(r)}", flush=True)
                    r = res["local 1.0.34"] = run_child(peer, str(folder), {}, args.peer_timeout, entries=False)
                    print(f"  local, 1.0.34:           {fmt(r, timeout=args.peer_timeout)}", flush=True)
                finally:
                    os.rename(off, folder / "_smdebug")
            if client is not None:
                n = upload(client, "scale", folder, f"c{steps}", True, False)
                url = f"s3://scale/c{steps}"
                r = res["s3 consolidated"] = run_child(sys.executable, url, s3env, 600)
                proxy.reset()
                run_child(sys.executable, url, s3proxied, 600, entries=False)
                res["s3 consolidated requests"] = proxy.snapshot()
                print(f"  moto, consolidated:      {fmt(r, proxy.snapshot())} ({n} objects uploaded)", flush=True)
                if full and steps <= args.s3_per_step_max:
                    upload(client, "scale", folder, f"p{steps}", False, True)
                    url = f"s3://scale/p{steps}"
                    proxy.reset()
                    r = res["s3 per-step"] = run_child(sys.executable, url, s3proxied, 600, entries=False)
                    res["s3 per-step requests"] = proxy.snapshot()
                    print(f"  moto, per-step:          {fmt(r, proxy.snapshot())} (through the proxy)", flush=True)
                    r = res["s3 1.0.34"] = run_child(peer, url, s3env, args.peer_timeout, entries=False)
                    print(f"  moto, 1.0.34:            {fmt(r, timeout=args.peer_timeout)}", flush=True)
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if proxy is not None:
            proxy.close()
        if moto is not None:
            moto.stop()
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "scale.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], "--entries" in sys.argv)
    else:
        main()

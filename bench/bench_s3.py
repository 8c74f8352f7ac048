"""S3 benchmark: ours against smdebug 1.0.34 on trials in a moto server (127.0.0.1), one run.

Writes trials of STEPS x 4 workers x 50 tensors with 1.0.34's FileWriter (the workload of
bench_trial.py), uploads them to a moto server process started here, and times with each
implementation (fresh process, AWS_ENDPOINT_URL_S3 pointing at moto): open+list, one tensor's
values(), its reductions over all steps, and every tensor of every worker at the last step.
1.0.34 is given --peer-timeout seconds per run (it lists the whole events/ folder for every value).

usage: python bench/bench_s3.py [--steps 100 1000] [--peer-timeout 600]
environment: SMDEBUG_PEER_PYTHON = the python of the 1.0.34 virtualenv (make peer)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKLOAD = HERE / "workload.py"
AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            return proc, url
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("moto server did not start") from None
            time.sleep(0.1)


def upload(folder: Path, url: str) -> None:
    sys.path.insert(0, str(REPO / "src"))
    from smdebug.storage import open_store

    store = open_store(url)
    files = [p for p in folder.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda p: store.write(p.relative_to(folder).as_posix(), p.read_bytes()), files))


def run(python: str, env: dict, args: list, timeout: float) -> dict | None:
    e = dict(os.environ, **env)
    if python == sys.executable:
        e["PYTHONPATH"] = str(REPO / "src")
    try:
        p = subprocess.run([python, str(WORKLOAD), *args], capture_output=True, text=True, env=e, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        raise SystemExit(f"{python} {args} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--peer-timeout", type=float, default=600)
    args = ap.parse_args()
    peer = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    base = Path(tempfile.mkdtemp(prefix="smdebug-s3bench-"))
    moto, endpoint = start_moto()
    env = dict(AWS, AWS_ENDPOINT_URL_S3=endpoint, AWS_ENDPOINT_URL=endpoint)
    os.environ.update(env)
    results: dict = {}
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="bench")
        for steps in args.steps:
            local = base / f"t{steps}"
            print(f"writing {steps} steps with 1.0.34 and uploading ...", flush=True)
            run(peer, {}, ["write", str(local), str(steps), "4", "50"], timeout=3600)
            upload(local, f"s3://bench/t{steps}")
            url = f"s3://bench/t{steps}"
            row = {}
            for name, py in (("ours", sys.executable), ("1.0.34", peer)):
                t0 = time.perf_counter()
                r = run(py, env, ["read", url], timeout=args.peer_timeout if name == "1.0.34" else 600)
                total = time.perf_counter() - t0
                if r is not None:
                    r = dict(
                        r,
                        total_s=total,
                        ops_s=sum(r[k] for k in ("open_list_s", "values_s", "reductions_s", "last_step_s")),
                    )
                row[name] = r
                print(
                    f"  {steps} steps, {name}: {row[name] if r else f'did not finish in {args.peer_timeout:.0f} s'}",
                    flush=True,
                )
            results[steps] = row
    finally:
        moto.kill()
    print("\nS3 (moto on 127.0.0.1), 4 workers x 50 tensors")
    print(f"{'operation':<36}" + "".join(f"{f'{s} steps: 1.0.34':>20}{'ours':>10}{'x':>8}" for s in results))
    for key, label in (
        ("open_list_s", "open + list"),
        ("values_s", "one tensor's values()"),
        ("reductions_s", "its reductions, all steps"),
        ("last_step_s", "last step, all tensors x workers"),
        ("ops_s", "the four operations together"),
        ("total_s", "whole run (3 opens, process start)"),
    ):
        line = f"{label:<36}"
        for row in results.values():
            theirs = row["1.0.34"][key] if row["1.0.34"] else None
            ours = row["ours"][key]
            line += f"{theirs if theirs is not None else float('nan'):>20.3f}{ours:>10.3f}"
            line += f"{theirs / ours:>7.1f}x" if theirs else f"{'-':>8}"
        print(line)
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "s3.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

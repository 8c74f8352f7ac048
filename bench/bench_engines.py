"""Overhead of the hook inside each engine (issue 24): the same training run with and without the
hook, the hook saving every 10th step (weights, gradients, losses / metrics).

- ``dask``: ``xgboost.dask.train`` on a 2-worker LocalCluster (processes, 127.0.0.1), 60 rounds
  of depth-6 ``hist`` trees on 40,000 x 40 rows; the time is ``dask.train`` (the cluster is
  started once, outside the timing);
- ``fsdp``: FSDP2 ``fully_shard`` MLP (4 x 512 hidden) on 2 gloo processes (torchrun), 60 steps;
  the hook in both modes: each rank's shard (``local``) and ``gather_sharded=True`` (``gather``);
  the time is rank 0's training loop;
- ``huggingface``: ``Trainer.train`` of a BERT built from a config (2 layers, hidden 128, sequences
  of 64), 60 optimizer steps of batch 16;
- ``lightning``: ``Trainer.fit`` of an MLP (4 x 512 hidden), 240 optimizer steps of batch 64.

Wall-clock time and (but for Dask, whose training runs in the workers) the process's CPU time
(all its threads: the hook's writer's too; steadier on a shared machine); for Lightning also each
thread's CPU (``/proc/self/task/*/schedstat``; the hook's writer has ended at ``hook.close()`` and
shows as "(ended threads)"), and with SMDEBUG_BENCH_PROFILE=FILE a cProfile (CPU clock) of the
main thread of the last hook run; each Lightning run's output is removed after it and os.sync()
runs before the next (else each run writes into a page cache the runs before filled: their cost
grew from run to run); --lightning-parts adds the configurations that take the hook's cost apart
(PyTorch's dispatch of no-op module and gradient hooks; the hook saving nothing; saving only the
loss). Within an engine's
process, the configurations are interleaved (none, hook, none, hook, ...) and
after one warm-up run of each, the medians of ``--repeat`` runs are reported, as the machine is shared. Prints a table and writes
bench/out/engines.json.

usage: python bench/bench_engines.py [--repeat 5] [--engines dask,fsdp,huggingface,lightning] [--lightning-parts]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchutil import CpuClock, machine, maybe_profiled, median_threads

HERE = Path(__file__).resolve().parent
STEPS = 60
LIGHTNING_STEPS = 240  # a Lightning step of this MLP takes ~25 ms: 60 of them are too short to time
INTERVAL = 10


def _save_config():
    import smdebug.pytorch as smd

    return smd.SaveConfig(save_interval=INTERVAL)


def _torch_hook(out_dir, **kw):
    import smdebug.pytorch as smd

    return smd.Hook(
        out_dir=out_dir, save_config=_save_config(), include_collections=["weights", "gradients", "losses"], **kw
    )


# ------------------------------------------------------------------------------------------ dask
def bench_dask(repeat: int, tmp: str) -> dict:
    import numpy as np
    import xgboost as xgb
    import xgboost.dask  # noqa: F401
    from dask import array as da
    from dask.distributed import Client, LocalCluster

    import smdebug.xgboost as smdx

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40_000, 40), dtype=np.float32)
    y = (X[:, :5].sum(1) + 0.5 * rng.standard_normal(40_000) > 0).astype(np.float32)
    params = {
        "objective": "binary:logistic",
        "tree_method": "hist",
        "max_depth": 6,
        "nthread": 1,
        "eval_metric": ["logloss", "auc"],
    }
    times: dict = {"none": [], "hook": []}
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        dtrain = xgb.dask.DaskDMatrix(client, da.from_array(X, chunks=(10_000, 40)), da.from_array(y, chunks=10_000))
        for r in range(-1, repeat):  # -1: a warm-up run of each configuration, not counted
            for config in times:
                callbacks = []
                if config == "hook":
                    callbacks = [
                        smdx.Hook(
                            out_dir=f"{tmp}/dask-{r}",
                            include_workers="all",
                            save_config=smdx.SaveConfig(save_interval=INTERVAL),
                            include_collections=["metrics", "feature_importance"],
                        )
                    ]
                t0 = time.perf_counter()
                xgb.dask.train(client, params, dtrain, STEPS, evals=[(dtrain, "train")], callbacks=callbacks)
                if r >= 0:
                    times[config].append(time.perf_counter() - t0)
    return {"wall": times}  # the training runs in the workers' processes: no CPU time of the client's


# ------------------------------------------------------------------------------------------ fsdp
def _fsdp_rank(repeat: int, tmp: str) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.fsdp import fully_shard

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    times: dict = {"none": [], "local": [], "gather": []}
    cpu: dict = {c: [] for c in times}
    for r in range(-1, repeat):  # -1: a warm-up run of each configuration, not counted
        for config in times:
            torch.manual_seed(0)
            layers = [nn.Linear(64, 512), nn.ReLU()] + [m for _ in range(3) for m in (nn.Linear(512, 512), nn.ReLU())]
            model = nn.Sequential(*layers, nn.Linear(512, 1))
            for m in model:
                if isinstance(m, nn.Linear):
                    fully_shard(m)
            fully_shard(model)
            hook = None
            if config != "none":
                hook = _torch_hook(
                    f"{tmp}/fsdp-{config}-{r}", include_workers="all", gather_sharded=(config == "gather")
                )
                hook.register_module(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            g = torch.Generator().manual_seed(rank)
            data = [(torch.randn(64, 64, generator=g), torch.randn(64, 1, generator=g)) for _ in range(STEPS)]
            dist.barrier()
            t0, c0 = time.perf_counter(), time.process_time()
            for x, y in data:
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                if hook is not None:
                    hook.record_tensor_value("loss", loss)
                loss.backward()
                opt.step()
            if hook is not None:
                hook.close()
            c1 = time.process_time()
            dist.barrier()
            if r >= 0:
                times[config].append(time.perf_counter() - t0)
                cpu[config].append(c1 - c0)
    if rank == 0:
        print("FSDP_TIMES " + json.dumps({"wall": times, "cpu": cpu}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def bench_fsdp(repeat: int, tmp: str) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    out = subprocess.run(
        [
            torchrun,
            "--nproc_per_node",
            "2",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            port,
            __file__,
            "--fsdp-rank",
            "--repeat",
            str(repeat),
            "--tmp",
            tmp,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    line = [x for x in out.stdout.splitlines() if x.startswith("FSDP_TIMES ")]
    if out.returncode != 0 or not line:
        raise SystemExit(f"the FSDP run failed:\n{out.stderr[-3000:]}")
    return json.loads(line[0][len("FSDP_TIMES ") :])


# ----------------------------------------------------------------------------------- huggingface
def bench_huggingface(repeat: int, tmp: str) -> dict:
    import torch
    import transformers

    from smdebug.integrations.huggingface import SMDebugCallback

    torch.set_num_threads(1)

    class Rows(torch.utils.data.Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.ids = torch.randint(0, 1000, (STEPS * 16, 64), generator=g)
            self.labels = torch.randint(0, 2, (STEPS * 16,), generator=g)

        def __len__(self):
            return len(self.ids)

        def __getitem__(self, i):
            return {"input_ids": self.ids[i], "labels": self.labels[i]}

    config = transformers.BertConfig(
        vocab_size=1000,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        max_position_embeddings=64,
        num_labels=2,
    )
    times: dict = {"none": [], "hook": []}
    cpu: dict = {c: [] for c in times}
    for r in range(-1, repeat):  # -1: a warm-up run of each configuration, not counted
        for name in times:
            torch.manual_seed(0)
            model = transformers.BertForSequenceClassification(config)
            callbacks = [SMDebugCallback(_torch_hook(f"{tmp}/hf-{r}"))] if name == "hook" else []
            args = transformers.TrainingArguments(
                output_dir=f"{tmp}/hf-out",
                per_device_train_batch_size=16,
                max_steps=STEPS,
                logging_steps=INTERVAL,
                report_to=[],
                save_strategy="no",
                use_cpu=True,
                disable_tqdm=True,
                dataloader_num_workers=0,
            )
            trainer = transformers.Trainer(model=model, args=args, train_dataset=Rows(), callbacks=callbacks)
            t0, c0 = time.perf_counter(), time.process_time()
            trainer.train()
            if callbacks:
                callbacks[0].hook.close()
            if r >= 0:
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    return {"wall": times, "cpu": cpu}


# ------------------------------------------------------------------------------------- lightning
def _lightning_callbacks(name: str, out: str) -> list:
    """The callbacks of configuration ``name``: ``hook`` is the benchmark's; the others take it
    apart (--lightning-parts): ``hook-never`` saves nothing (the hook's module and gradient hooks,
    the callback), ``hook-loss`` only the loss every 10th step."""
    import smdebug.pytorch as smd
    from smdebug.integrations.lightning import SMDebugCallback

    if name == "hook":
        return [SMDebugCallback(_torch_hook(out))]
    if name in ("hook-never", "hook-loss"):
        interval = 10**9 if name == "hook-never" else INTERVAL
        colls = ["losses"] if name == "hook-loss" else ["weights", "gradients", "losses"]
        return [
            SMDebugCallback(
                smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=interval), include_collections=colls)
            )
        ]
    return []


def _noop_torch_hooks(module) -> None:
    """What PyTorch's dispatch of the hook's module and gradient hooks costs, with hooks that do
    nothing (--lightning-parts: ``torch-hooks``)."""
    module.register_forward_pre_hook(lambda m, i: None)
    for sub in module.modules():
        sub.register_forward_hook(lambda m, i, o: None)
    for p in module.parameters():
        p.register_post_accumulate_grad_hook(lambda p: None)


def bench_lightning(repeat: int, tmp: str, parts: bool = False) -> dict:
    import lightning.pytorch as pl
    import torch
    from torch import nn

    torch.set_num_threads(1)

    class MLP(pl.LightningModule):
        def __init__(self):
            super().__init__()
            layers = [nn.Linear(64, 512), nn.ReLU()] + [m for _ in range(3) for m in (nn.Linear(512, 512), nn.ReLU())]
            self.net = nn.Sequential(*layers, nn.Linear(512, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(LIGHTNING_STEPS * 64, 64, generator=g)
    data = torch.utils.data.TensorDataset(x, x[:, :1])
    names = ["none", "torch-hooks", "hook-never", "hook-loss", "hook"] if parts else ["none", "hook"]
    times: dict = {c: [] for c in names}
    cpu: dict = {c: [] for c in times}
    threads: dict = {c: [] for c in times}
    for r in range(-1, repeat):  # -1: a warm-up run of each configuration, not counted
        for name in times:
            torch.manual_seed(0)
            out = f"{tmp}/pl-{r}"
            os.sync()  # the previous run's writeback does not land in this one's timing
            callbacks = _lightning_callbacks(name, out)
            trainer = pl.Trainer(
                max_steps=LIGHTNING_STEPS,
                accelerator="cpu",
                devices=1,
                logger=False,
                enable_checkpointing=False,
                enable_progress_bar=False,
                enable_model_summary=False,
                callbacks=callbacks,
            )
            module = MLP()
            if name == "torch-hooks":
                _noop_torch_hooks(module)
            clock = CpuClock()
            clock.start()
            # SMDEBUG_BENCH_PROFILE=FILE: cProfile (CPU clock) of the main thread of the last hook run
            with maybe_profiled() if r == repeat - 1 and name == "hook" else contextlib.nullcontext():
                trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=64))
                if callbacks:
                    callbacks[0].hook.close()
            got = clock.stop()
            shutil.rmtree(out, ignore_errors=True)  # each run writes into a page cache as free as the last's
            if r >= 0:
                times[name].append(got["wall_s"])
                cpu[name].append(got["proc_cpu_s"])
                threads[name].append(got["threads_cpu_s"])
    for name, runs in threads.items():  # the writer has ended (hook.close): "(ended threads)"
        per_step = {t: round(s / LIGHTNING_STEPS * 1e3, 3) for t, s in median_threads(runs).items()}
        print(f"lightning    CPU ms/step by thread, {name}: {json.dumps(per_step)}", flush=True)
    return {"wall": times, "cpu": cpu}


ENGINES = {"dask": bench_dask, "fsdp": bench_fsdp, "huggingface": bench_huggingface, "lightning": bench_lightning}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument(
        "--lightning-parts",
        action="store_true",
        help="Lightning: also no-op torch hooks, a hook that saves nothing, one that saves the loss only",
    )
    ap.add_argument("--fsdp-rank", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fsdp_rank:
        return _fsdp_rank(args.repeat, args.tmp)
    results = {}
    print(f"machine: {machine()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for engine in args.engines.split(","):
            kw = {"parts": True} if engine == "lightning" and args.lightning_parts else {}
            measured = ENGINES[engine](args.repeat, tmp, **kw)
            results[engine] = {}
            for clock, times in measured.items():
                base = statistics.median(times["none"])
                results[engine][clock] = {
                    c: {"median_s": statistics.median(t), "runs_s": t, "ratio": statistics.median(t) / base}
                    for c, t in times.items()
                }
                for c, v in results[engine][clock].items():
                    print(
                        f"{engine:12s} {clock:4s} {c:11s} median {v['median_s']:.3f} s  ratio {v['ratio']:.3f}x  "
                        f"runs {[round(x, 3) for x in v['runs_s']]}",
                        flush=True,
                    )
    print(f"machine at the end: {machine()}", flush=True)
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "engines.json").write_text(
        json.dumps({"steps": STEPS, "save_interval": INTERVAL, "repeat": args.repeat, "results": results}, indent=1)
    )


if __name__ == "__main__":
    main()

"""Multi-node: one launcher per node sharing the trial (and here the run folder); rules run once, on
node 0; a rule's stop request stops every node's processes; the node's rank from flag or environment."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from smdebug.launch import LaunchConfigError
from smdebug.launch.nodes import resolve_node_rank

MLP = str(Path(__file__).parent / "scripts" / "mlp.py")


def test_node_rank_from_flag_and_environment():
    assert resolve_node_rank(None, {}) == 0
    assert resolve_node_rank("2", {"NODE_RANK": "1"}) == 2
    assert resolve_node_rank(None, {"NODE_RANK": "1", "SM_CURRENT_HOST": "algo-1"}) == 1
    hosts = {"SM_HOSTS": '["algo-2", "algo-1", "algo-3"]'}
    assert resolve_node_rank(None, {**hosts, "SM_CURRENT_HOST": "algo-1"}) == 0
    assert resolve_node_rank(None, {**hosts, "SM_CURRENT_HOST": "algo-3"}) == 2
    with pytest.raises(LaunchConfigError, match="SM_CURRENT_HOST='algo-9' is not in"):
        resolve_node_rank(None, {**hosts, "SM_CURRENT_HOST": "algo-9"})
    with pytest.raises(LaunchConfigError, match=r"\$NODE_RANK='one' must be a node rank"):
        resolve_node_rank(None, {"NODE_RANK": "one"})
    with pytest.raises(LaunchConfigError, match="--node-rank='-1'"):
        resolve_node_rank("-1", {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_nodes_rules_run_once_and_a_stop_stops_both(tmp_path):
    pytest.importorskip("torch")
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    run_dir, out_dir, port, k = tmp_path / "run", tmp_path / "run" / "debug-output", _free_port(), 6
    launchers = []
    for node in (0, 1):
        cmd = [
            sys.executable,
            "-m",
            "smdebug.cli",
            "run",
            "--node-rank",
            str(node),
            "--run-dir",
            str(run_dir),
            "--out-dir",
            str(out_dir),
            "--name",
            "two-nodes",
            "--collection",
            "gradients:save_interval=1",
            "--rule",
            "exploding_tensor",
            "--action",
            "stop",
            "--stop-grace",
            "3",
            "--term-grace",
            "3",
            "--",
            torchrun,
            "--nnodes=2",
            f"--node_rank={node}",
            "--nproc_per_node=1",
            "--master_addr=127.0.0.1",
            f"--master_port={port}",
            MLP,
            "--ddp",
            "--steps",
            "400",
            "--nan-at",
            str(k),
            "--step-time",
            "0.05",
        ]
        launchers.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=240)[0] for p in launchers]
    node0 = json.loads((run_dir / "status.json").read_text())
    node1 = json.loads((run_dir / "status-node-1.json").read_text())
    assert node0["TrainingJobStatus"] == "Stopped", outputs[0][-3000:]
    assert node1["TrainingJobStatus"] == "Stopped", outputs[1][-3000:]
    assert [r["RuleEvaluationStatus"] for r in node0["DebugRuleEvaluationStatuses"]] == ["IssuesFound"]
    assert node1["DebugRuleEvaluationStatuses"] == []  # the rule ran once, on node 0
    assert node0["StopRequest"]["Step"] == node1["StopRequest"]["Step"] == k
    assert os.listdir(run_dir / "rule-output") == ["ExplodingTensor"]
    assert (run_dir / "events-node-1.jsonl").exists()
    for out in outputs:
        assert "last step 400" not in out and f"last step {k + 20}" not in out  # both stopped early

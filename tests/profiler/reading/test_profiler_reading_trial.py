"""smdebug.profiler.reading.ProfileFolder: the columnar reader on real part-1 output and on 1.0.34's
own test resources, compared with what 1.0.34's readers see in the same files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from smdebug.exceptions import EventFileCorrupt
from smdebug.profiler.reading import FrameworkEvents, ProfileFolder
from smdtest import run_json

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sagemaker-debugger"
PEER_READ = Path(__file__).parents[1] / "peer_read.py"


def _system_rows(trial: ProfileFolder) -> list:
    rows = []
    for s in trial.system_series():
        for ts, v in zip(s.timestamp_s, s.value):
            rows.append([s.type, s.name or None, s.dimension, float(v), s.node_id, float(ts)])
    return sorted(rows, key=repr)


def _framework_rows(events: FrameworkEvents) -> list:
    return sorted(
        (
            [str(p), str(n), int(s), int(e), str(nd), int(pid), a]
            for p, n, s, e, nd, pid, a in zip(
                events.phase, events.name, events.start_us, events.end_us, events.node_id, events.pid, events.args
            )
        ),
        key=repr,
    )


def _peer_framework_rows(peer_events) -> list:
    return sorted(([p, n, s, e, nd, pid, a] for p, n, s, e, nd, pid, a, _ in peer_events), key=repr)


def _peer_system_rows(peer_events) -> list:
    return sorted(([t, n, d, float(v), nd, ts] for t, n, d, v, nd, ts in peer_events), key=repr)


@pytest.mark.parametrize("folder", ["test_traces", "model_timeline_traces", "merge_traces", "horovod_timeline_traces"])
def test_reads_1034_resources_as_1034_does(peer, folder):
    root = FIXTURES / folder
    trial = ProfileFolder(root)
    peer_fw = run_json(peer, PEER_READ, root, "framework")["events"]
    ours = _framework_rows(trial.framework_events())
    assert len(ours) == len(peer_fw) > 0
    assert ours == _peer_framework_rows(peer_fw)
    if (root / "system").exists():
        peer_sys = run_json(peer, PEER_READ, root, "system")["events"]
        assert _system_rows(trial) == _peer_system_rows(peer_sys)
        assert len(peer_sys) > 0


def test_1034_system_resources_as_series():
    trial = ProfileFolder(FIXTURES / "test_traces")
    gpu = trial.system_series(type="gpu", dimension="GPUMemoryUtilization")
    assert [s.name for s in gpu] and all(s.type == "gpu" and s.node_id == "algo-1" for s in gpu)
    for s in trial.system_series():
        assert np.all(np.diff(s.timestamp_us) >= 0)
        assert np.array_equal(s.timestamp_us, (s.timestamp_s * 1e6).astype(np.int64))
    # the old-style framework names 1589930988000000_4487_0000_pythontimeline.json name node "4487"
    assert set(trial.framework_events().node_id) == {"4487"}
    assert trial.first_timestamp == min(
        int(trial.framework_events().start_us[0]), min(int(s.timestamp_us[0]) for s in trial.system_series())
    )


def test_a_corrupt_last_line_is_skipped_a_corrupt_middle_line_names_file_and_line(tmp_path):
    root = FIXTURES / "corrupt_system"
    series = ProfileFolder(root).system_series()
    lines = (root / "system" / "incremental" / "1591160699.algo-1.json").read_text().splitlines()
    assert sum(len(s) for s in series) == len(lines) - 1  # the half-written last line
    bad = tmp_path / "system" / "incremental" / "2020060306"
    bad.mkdir(parents=True)
    text = lines[:3] + ['{"Type": "cpu", "Name":"cpu0", "Dim'] + lines[3:-1]
    (bad / "1591160699.algo-1.json").write_text("\n".join(text) + "\n")
    with pytest.raises(EventFileCorrupt, match=r"1591160699\.algo-1\.json: line 4 "):
        ProfileFolder(tmp_path).system_series()


def test_an_empty_or_missing_folder_reads_as_no_data_without_waiting(tmp_path, caplog):
    t0 = time.monotonic()
    for root in (tmp_path, tmp_path / "not-there"):
        trial = ProfileFolder(root)
        assert trial.system_series() == [] and len(trial.framework_events()) == 0 and len(trial.steps()) == 0
        assert trial.first_timestamp is None and trial.get_latest_timestamp() is None
        assert not trial.job_finished() and not trial.has_data()
    assert time.monotonic() - t0 < 5
    assert any("not-there does not exist" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


def _write_minute(root: Path, minute: int, samples: int, node="algo-1", start_value=0.0) -> Path:
    hour = time.strftime("%Y%m%d%H", time.gmtime(minute))
    folder = root / "system" / "incremental" / hour
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{minute}.{node}.json"
    with path.open("a") as f:
        for i in range(samples):
            ts = minute + i * 0.5
            for core in range(2):
                f.write(
                    f'{{"Type":"cpu","Name":"cpu{core}","Dimension":"CPUUtilization","Value":{start_value + i},'
                    f'"NodeId":"{node}","Timestamp":{ts}}}\n'
                )
    return path


def test_windows_are_inclusive_and_touch_only_the_files_they_need(tmp_path):
    m0 = 1_800_000_000 // 60 * 60
    for k in range(10):
        _write_minute(tmp_path, m0 + 60 * k, 120)
    trial = ProfileFolder(tmp_path)
    start, end = (m0 + 300) * 10**6, (m0 + 330) * 10**6
    (cpu0, cpu1) = trial.system_series(start, end)
    assert (cpu0.name, cpu1.name) == ("cpu0", "cpu1")
    assert cpu0.timestamp_us[0] == start and cpu0.timestamp_us[-1] == end and len(cpu0) == 61
    parsed = [f for f in trial._system.opened.values() if f.parsed is not None]
    assert 0 < len(parsed) < 10  # the window's minutes and the 3-minute margin, not the whole run
    assert [s.name for s in trial.system_series(node_id="algo-2")] == []
    assert len(trial.system_series(type="gpu")) == 0


def test_refresh_sees_new_files_and_files_that_grew(tmp_path):
    m0 = 1_800_000_000 // 60 * 60
    path = _write_minute(tmp_path, m0, 10)
    trial = ProfileFolder(tmp_path)
    assert len(trial.system_series()[0]) == 10
    latest = trial.get_latest_timestamp()
    _write_minute(tmp_path, m0, 10, start_value=100)  # the same minute, appended
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    _write_minute(tmp_path, m0 + 60, 5)
    assert len(trial.system_series()[0]) == 10  # nothing new until refresh()
    trial.refresh()
    assert len(trial.system_series()[0]) == 25
    assert trial.get_latest_timestamp() > latest
    path.unlink()  # a file deleted since: gone after refresh, nothing else changes
    trial.refresh()
    assert len(trial.system_series()[0]) == 5


def _train(tmp_path, batches=24):
    torch = pytest.importorskip("torch")
    pytest.importorskip("psutil")
    import smdebug.pytorch as smd
    from smdebug.profiler import ProfilerConfig

    torch.manual_seed(0)
    x = torch.randn(batches * 8, 16)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        profiler_config=ProfilerConfig(local_path=str(tmp_path / "prof"), interval_millis=100),
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for i, (xb, yb) in enumerate(loader):
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
        if i == 10:
            time.sleep(0.5)  # one slow step
    hook.close()
    return tmp_path / "prof"


def test_a_pytorch_run_reads_back_as_steps_series_and_events_and_as_1034_reads_it(tmp_path, peer):
    root = _train(tmp_path)
    trial = ProfileFolder(root)
    assert trial.job_finished()
    steps = trial.steps("TRAIN")
    assert list(steps.step) == list(range(24))
    assert steps.duration_us[10] >= 500_000 and np.all(steps.end_us > steps.start_us)
    assert len(trial.steps("EVAL")) == 0
    events = trial.framework_events()
    assert {"Step:ModeKeys.TRAIN", "Forward", "Backward", "Optimizer", "DataLoaderIter"} <= set(events.phase)
    inside = trial.framework_events(int(steps.start_us[10]), int(steps.end_us[10]))
    assert 10 in set(inside.step) and len(inside) < len(events)
    cpus = trial.system_series(type="cpu", dimension="CPUUtilization")
    assert [s.name for s in cpus] == [f"cpu{i}" for i in range(len(cpus))] and len(cpus) == os.cpu_count()
    assert all(len(s) >= 3 and np.all((s.value >= 0) & (s.value <= 100)) for s in cpus)
    assert trial.first_timestamp <= int(steps.start_us[0]) <= int(steps.end_us[-1])
    assert trial.get_latest_timestamp() >= int(steps.end_us[-1]) - 1_000_000
    # 1.0.34's readers see the same rows
    peer_fw = run_json(peer, PEER_READ, root, "framework")["events"]
    assert _framework_rows(events) == _peer_framework_rows(peer_fw)
    peer_sys = run_json(peer, PEER_READ, root, "system")["events"]
    assert _system_rows(trial) == _peer_system_rows(peer_sys)


def test_a_copy_of_a_run_on_s3_reads_the_same(tmp_path, aws_env, bucket, boto_client):
    src = FIXTURES / "test_traces"
    for path in src.rglob("*.json"):
        boto_client.upload_file(str(path), bucket, f"job/profiler-output/{path.relative_to(src).as_posix()}")
    local, remote = ProfileFolder(src), ProfileFolder(f"s3://{bucket}/job/profiler-output")
    assert _system_rows(remote) == _system_rows(local)
    assert _framework_rows(remote.framework_events()) == _framework_rows(local.framework_events())
    assert remote.first_timestamp == local.first_timestamp
    boto_client.put_object(Bucket=bucket, Key="job/profiler-output/system/training_job_end.ts", Body=b"")
    assert not local.job_finished() and remote.job_finished()
    # 1.0.34's S3 readers and create_trial on s3://
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader, S3AlgorithmMetricsReader
    from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader, S3SystemMetricsReader
    from smdebug.trials import create_trial

    url = f"s3://{bucket}/job/profiler-output"
    far = 4102444800 * 10**6
    for local_cls, s3_cls in (
        (LocalSystemMetricsReader, S3SystemMetricsReader),
        (LocalAlgorithmMetricsReader, S3AlgorithmMetricsReader),
    ):
        ours, theirs = s3_cls(url).get_events(0, far), local_cls(str(src)).get_events(0, far)
        assert len(ours) == len(theirs) > 0
        assert [vars(e).get("timestamp", vars(e).get("start_time")) for e in ours] == [
            vars(e).get("timestamp", vars(e).get("start_time")) for e in theirs
        ]
    trial = create_trial(url, profiler=True, output_dir=str(tmp_path / "out"))
    assert trial.system_metrics_reader.__class__ is S3SystemMetricsReader and trial.job_finished()
    assert len(trial.get_system_metrics(0, far)) == sum(len(s) for s in local.system_series())


def _write_timeline_minutes(root: Path, minutes: int, t0_us: int) -> list[Path]:
    """One timeline file a minute, 1.0.34's layout, a step every 10 s with a forward pass inside."""
    paths = []
    head = (
        '{"name":"process_name","ph":"M","pid":0,"args":{"start_time_since_epoch_in_micros":' + str(t0_us) + "}},\n"
        '{"name":"process_name","ph":"M","pid":1,"args":{"name":"Step:ModeKeys.TRAIN"}},\n'
        '{"name":"process_name","ph":"M","pid":2,"args":{"name":"Forward"}}'
    )
    for m in range(minutes):
        lines = []
        for s in range(6):
            ts, step = m * 60_000_000 + s * 10_000_000, m * 6 + s
            args = f'"args":{{"pid":9,"step_num":"{step}"}}}}'
            lines.append(f'{{"name":"Net","ph":"X","pid":2,"ts":{ts + 1000},"dur":4000000,{args}')
            lines.append(f'{{"name":"Step:ModeKeys.TRAIN","ph":"X","pid":1,"ts":{ts},"dur":9000000,{args}')
        end = t0_us + m * 60_000_000 + 59_000_000
        folder = root / "framework" / "pevents" / time.strftime("%Y%m%d%H", time.gmtime(end / 1e6))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{end}_algo-1_pythontimeline.json"
        path.write_text("[\n" + head + ",\n" + ",\n".join(lines) + "\n]\n")
        paths.append(path)
    return paths


def test_a_walk_through_windows_reads_ahead_finds_what_single_queries_find_and_fails_where_they_do(tmp_path):
    t0 = 1_800_000_000 // 60 * 60 * 10**6
    paths = _write_timeline_minutes(tmp_path, 40, t0)
    paths[30].write_bytes(paths[30].read_bytes()[:-40])  # half written
    trial = ProfileFolder(tmp_path)
    for k in range(12):  # two-minute windows over the first 24 minutes
        start, end = t0 + k * 120_000_000, t0 + (k + 1) * 120_000_000 - 1
        ours = trial.framework_events(start, end)
        assert len(ours) > 0 and _framework_rows(ours) == _framework_rows(
            ProfileFolder(tmp_path).framework_events(start, end)
        )
    assert trial._framework.opened[str(paths[36].relative_to(tmp_path))].parsed is not None  # read ahead of the walk
    with pytest.raises(EventFileCorrupt, match=paths[30].name):
        trial.framework_events(t0 + 30 * 60_000_000, t0 + 31 * 60_000_000)


def test_a_series_read_from_one_file_has_contiguous_arrays(tmp_path):
    path = tmp_path / "system" / "incremental" / "2026092114" / "1800000000.algo-1.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b"".join(
            b'{"Type":"cpu","Name":"cpu%d","Dimension":"U","Value":%d,"NodeId":"algo-1","Timestamp":%d.5}\n'
            % (c, 10 * s + c, 1_800_000_000 + s)
            for s in range(5)
            for c in range(3)
        )
    )
    series = ProfileFolder(tmp_path).system_series()
    assert [s.name for s in series] == ["cpu0", "cpu1", "cpu2"]
    assert series[1].value.tolist() == [1, 11, 21, 31, 41]
    assert series[1].timestamp_s.tolist() == [1_800_000_000.5 + s for s in range(5)]
    assert all(s.value.flags.c_contiguous and s.timestamp_s.flags.c_contiguous for s in series)


_COLUMNS = ("phase", "name", "start_us", "end_us", "step", "node_id", "pid", "tid", "phase_pid", "file_suffix")


def _write_growing_timelines(root: Path, files: int, t0_us: int, grow: bool, nodes: int) -> list[Path]:
    """One timeline file a minute, 1.0.34's layout, of node ``algo-<1 + k % nodes>``; file k has
    4 (k + 1) events when ``grow``, else 40 (a step logged after its forward pass, as 1.0.34's
    writer does)."""
    paths = []
    for k in range(files):
        base = t0_us + k * 60_000_000
        events = [
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": base}},
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Step:ModeKeys.TRAIN"}},
            {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Forward"}},
        ]
        for s in range(2 * (k + 1) if grow else 20):
            args = {"pid": 9, "step_num": str(1000 * k + s)}
            events.append({"name": f"op{s % 3}", "pid": 2, "ph": "X", "ts": 100 * s + 5, "dur": 40, "args": args})
            events.append({"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 100 * s, "dur": 90, "args": args})
        lines = [json.dumps(e) for e in events]
        end = base + 59_000_000
        folder = root / "framework" / "pevents" / time.strftime("%Y%m%d%H", time.gmtime(end / 1e6))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{end}_algo-{1 + k % nodes}_pythontimeline.json"
        path.write_text("[\n" + ",\n".join(lines) + "\n]\n")
        paths.append(path)
    return paths


@pytest.mark.parametrize("grow,nodes", [(False, 1), (True, 1), (False, 2)])
def test_a_read_in_many_batches_is_one_range_of_its_arena_with_each_files_rows(tmp_path, monkeypatch, grow, nodes):
    """The batches of one read write their events one after the other into one table, sized from
    the first batch for the files to come: the answer is a range of it (no copy), with the rows of
    the files read one at a time by the general reader, str columns and args included. Files that
    grow past that estimate go on in a second table, and two nodes' events are sorted together:
    the answer is then a copy, still with those rows."""
    from smdebug.profiler.reading import folder as trial_module
    from smdebug.profiler.reading.trace_files import parse_trace_file

    paths = _write_growing_timelines(tmp_path, 40, 1_800_000_000 // 60 * 60 * 10**6, grow, nodes)
    monkeypatch.setattr(trial_module, "BATCH_BYTES", 6_000)  # a few files a batch
    trial = ProfileFolder(tmp_path)
    ours = trial.framework_events()
    expected = FrameworkEvents.concat(
        [
            parse_trace_file(p.read_bytes(), p.name, f"algo-{1 + k % nodes}", "pythontimeline.json")
            for k, p in enumerate(paths)
        ]
    )
    assert ("_rows_of" in ours.__dict__) == (nodes == 1 and not grow)  # a range of one table, or a copy
    assert len(ours) == len(expected) > 0
    for c in _COLUMNS:
        assert getattr(ours, c).tolist() == getattr(expected, c).tolist(), c
    assert list(ours.args) == list(expected.args)
    one = trial.framework_events(*[int(t) for t in expected.start_us[[100, 130]]])  # the files' ranges, kept
    assert _framework_rows(one) == _framework_rows(
        expected.overlapping(*[int(t) for t in expected.start_us[[100, 130]]])
    )

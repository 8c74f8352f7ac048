"""The profiler rules' decisions as pure units (smdebug.rules.profiler.stats)."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.profiler.stats import (
    box_stats,
    js_distance,
    loaders_per_second,
    moving_increase,
    outlier_mask,
    snapshot_ids,
    summary_stats,
    utilization_histogram,
)


def test_box_stats_whiskers_are_clipped_to_the_data():
    b = box_stats(np.arange(101.0))
    assert b["p25"] == pytest.approx(25) and b["p75"] == pytest.approx(75) and b["p95"] == pytest.approx(95)
    assert b["upper"] == pytest.approx(100) and b["lower"] == pytest.approx(0) and b["max"] == pytest.approx(100)
    b = box_stats(np.r_[np.full(100, 50.0), 1000.0])
    assert b["upper"] == pytest.approx(50) and b["max"] == pytest.approx(1000)


def test_summary_stats_rounds_and_clips_negatives():
    s = summary_stats([-1.0, 2.3456, 3.0])
    assert s["min"] == 0.0 and s["max"] == 3.0 and s["p50"] == 2.35


def test_snapshots_group_rows_within_20_ms_of_the_first():
    t = np.array([0, 5_000, 19_000, 25_000, 100_000, 100_010, 200_000])
    assert snapshot_ids(t).tolist() == [0, 0, 0, 1, 2, 2, 3]


def test_moving_increase_sees_a_steady_climb_that_the_shifted_windows_missed():
    climb = np.r_[np.full(20, 10.0), 10.0 + 1.0 * np.arange(1, 21)]  # +1 point per sample
    inc = moving_increase(climb, 10)
    assert inc.max() == pytest.approx(10.0)  # two windows of 10 apart: 10 points
    v = climb
    old_reading = np.mean(v[-10:]) - np.mean(v[-11:-2])  # 1.0.34's slices: about 2 points
    assert old_reading < 5 < inc.max()
    assert moving_increase(np.full(30, 40.0), 10).max() == pytest.approx(0)
    assert len(moving_increase(np.ones(19), 10)) == 0


def test_histogram_keeps_a_busy_gpus_100():
    assert utilization_histogram([99.0, 100.0, 100.0]).sum() == 3


def test_js_distance_matches_scipy():
    scipy_spatial = pytest.importorskip("scipy.spatial")
    rng = np.random.default_rng(1)
    p, q = utilization_histogram(rng.uniform(0, 100, 500)), utilization_histogram(rng.normal(80, 5, 500))
    assert js_distance(p, q) == pytest.approx(scipy_spatial.distance.jensenshannon(p, q), rel=1e-9)
    assert js_distance(p, p) == pytest.approx(0, abs=1e-12)
    with pytest.raises(ValueError, match="empty"):
        js_distance(np.zeros(5), p[:5])


def test_outliers_are_above_mean_plus_k_std():
    d = np.r_[np.full(100, 1.0), 50.0]
    assert outlier_mask(d, 3).tolist() == [False] * 100 + [True]
    assert not outlier_mask(np.full(10, 1.0), 3).any()


def test_loaders_per_second_counts_distinct_processes():
    s = 1_000_000
    starts = [0, 10, 20, s + 1, s + 2]
    pids = [7, 8, 7, 9, 9]
    assert loaders_per_second(starts, pids) == {0: 2, 1: 1}
    assert loaders_per_second([], []) == {}

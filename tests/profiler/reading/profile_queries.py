"""Run by 1.0.34's interpreter and by ours (each importing its own smdebug): everything the readers
say about one profiler folder, as JSON, for a field-by-field comparison. Usage: profile_queries.py <root>... (a list, one entry per root)

- ``events``: every framework event of the readers, every field but ``tid`` (1.0.34 hashes a salted
  string for it: it differs in every process), sorted;
- ``step_intervals``: ``_get_time_interval_for_step`` for a few step pairs;
- ``system``, ``framework``: PandasFrame's DataFrames, every column (but ``tid``), as they are
  (``*_us`` relative to the frame's ``start_time``), in the frame's row order sorted;
- ``start_time``, ``job_statistics`` (a pandas Series, as 1.0.34 gives some members, becomes
  ``{"series": [...]}``), ``step_statistics``."""

import json
import math
import os
import sys

os.environ["SMDEBUG_LOG_LEVEL"] = "error"

from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader  # noqa: E402
from smdebug.profiler.analysis.utils.pandas_data_analysis import PandasFrameAnalysis  # noqa: E402
from smdebug.profiler.analysis.utils.profiler_data_to_pandas import PandasFrame  # noqa: E402

EVENT_FIELDS = (
    "event_phase",
    "event_name",
    "start_time",
    "end_time",
    "duration",
    "node_id",
    "pid",
    "phase_pid",
    "event_args",
    "file_type",
    "phase",
)


def plain(v):
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v


def rows(df, drop=("tid",)):
    cols = [c for c in df.columns if c not in drop]
    return {
        "columns": cols,
        "rows": sorted(([plain(v) for v in r] for r in df[cols].itertuples(index=False)), key=json.dumps),
    }


def query(root):
    reader = LocalAlgorithmMetricsReader(root)
    events = reader.get_events(0, 4102444800 * 10**6)
    out = {
        "events": sorted(([plain(getattr(e, f)) for f in EVENT_FIELDS] for e in events), key=json.dumps),
        "step_intervals": [
            list(reader._get_time_interval_for_step(a, b)) for a, b in ((0, 1), (2, 5), (10, 19), (3, 99))
        ],
    }
    pf = PandasFrame(root)
    sys_df = pf.get_all_system_metrics()
    fw_df = pf.get_all_framework_metrics()
    out["start_time"] = plain(pf.start_time)
    out["system"] = rows(sys_df)
    out["framework"] = rows(fw_df)
    analysis = PandasFrameAnalysis(sys_df, fw_df)
    stats = analysis.get_job_statistics()
    out["job_statistics"] = {
        k: ({"series": plain(v.tolist())} if type(v).__name__ == "Series" else plain(v)) for k, v in vars(stats).items()
    }
    out["step_statistics"] = rows(analysis.get_step_statistics(), drop=())
    return out


print(json.dumps([query(root) for root in sys.argv[1:]]))

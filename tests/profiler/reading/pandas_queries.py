"""Run by 1.0.34's interpreter and by ours (each importing its own smdebug): PandasFrame and
PandasFrameAnalysis over a profiler folder, printed as JSON with absolute times (µs since the epoch)
so that the two can be compared whatever their ``start_time``. Usage: pandas_queries.py <root>"""

import json
import os
import sys

os.environ["SMDEBUG_LOG_LEVEL"] = "error"

from smdebug.profiler.analysis.utils.pandas_data_analysis import PandasFrameAnalysis, Resource, StatsBy  # noqa: E402
from smdebug.profiler.analysis.utils.profiler_data_to_pandas import PandasFrame  # noqa: E402


def records(df, columns, shift=(), start=0):
    df = df[columns].copy()
    for c in shift:
        df[c] = df[c] + start
    rows = [[v.item() if hasattr(v, "item") else v for v in row] for row in df.itertuples(index=False)]
    return sorted(rows, key=json.dumps)


def table(df):
    return sorted(
        ([v.item() if hasattr(v, "item") else v for v in row] for row in df.itertuples(index=False)), key=json.dumps
    )


pf = PandasFrame(sys.argv[1])
start = pf.start_time
sys_df = pf.get_all_system_metrics()
fw_df = pf.get_all_framework_metrics()
dl_df = pf.get_all_dataloader_metrics(["DataLoader"])
out = {
    "system_columns": list(sys_df.columns),
    "framework_columns": list(fw_df.columns),
    "dataloader_columns": list(dl_df.columns),
    "system": records(
        sys_df,
        ["timestamp", "timestamp_us", "value", "system_metric", "dimension", "nodeID", "type"],
        ["timestamp_us"],
        start,
    ),
    "framework": records(
        fw_df,
        [
            "start_time",
            "end_time",
            "start_time_us",
            "end_time_us",
            "pid",
            "framework_metric",
            "step",
            "bytes",
            "process",
            "nodeID",
        ],
        ["start_time_us", "end_time_us"],
        start,
    ),
    "dataloader": records(dl_df, [c for c in dl_df.columns], ["start_time_us", "end_time_us"], start),
    "cpu_only": len(pf.get_all_system_metrics(["cpu0"])),
    "forward_only": len(pf.get_all_framework_metrics(["Forward"])),
}
sys_by_step, fw_by_step = pf.get_profiler_data_by_step(2, 4)
out["by_step"] = [len(sys_by_step), sorted(set(fw_by_step["step"].tolist()))]
fw_df = fw_df[fw_df["step"] != -1].copy()  # 1.0.34 raises IndexError on events outside every step
analysis = PandasFrameAnalysis(sys_df, fw_df)
out["step_stats"] = table(analysis.get_step_statistics())
out["step_stats_by_process"] = table(analysis.get_step_statistics(by=StatsBy.PROCESS))
out["utilization"] = table(analysis.get_utilization_stats())
out["utilization_cpu"] = table(analysis.get_utilization_stats(resource=Resource.CPU))
out["device_usage"] = table(analysis.get_device_usage_stats())
intervals = analysis.get_training_phase_intervals()
out["intervals"] = records(
    intervals, ["start_time_us", "end_time_us", "phase"], ["start_time_us", "end_time_us"], start
)
print(json.dumps(out))

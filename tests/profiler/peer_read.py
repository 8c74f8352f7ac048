"""Run by smdebug 1.0.34's interpreter (no PYTHONPATH): read a profiler folder with 1.0.34's readers
and print what they see as JSON. Usage: peer_read.py <root> system|framework"""

import json
import os

os.environ["SMDEBUG_LOG_LEVEL"] = "error"  # 1.0.34 logs to stdout
import sys

root, what = sys.argv[1], sys.argv[2]
if what == "system":
    from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader
    from smdebug.profiler.utils import TimeUnits

    r = LocalSystemMetricsReader(root)
    events = r.get_events(0, 4102444800, unit=TimeUnits.SECONDS)  # the whole range
    out = {
        "first_file_us": r.get_timestamp_of_first_available_file(),
        "events": [[e.type, e.name, e.dimension, e.value, e.node_id, e.timestamp] for e in events],
    }
else:
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader

    r = LocalAlgorithmMetricsReader(root)
    events = r.get_events(0, 4102444800 * 10**6)
    out = {
        "events": [[e.event_phase, e.event_name, e.start_time, e.end_time, e.node_id, e.pid, e.event_args,
                    e.file_type] for e in events],
    }
    if len(sys.argv) > 4:
        out["step_interval"] = list(r._get_time_interval_for_step(int(sys.argv[3]), int(sys.argv[4])))
print(json.dumps(out))

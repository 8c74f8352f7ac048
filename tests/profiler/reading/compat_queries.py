"""Run by 1.0.34's interpreter and by ours (the same script, each importing its own smdebug): the
1.0.34 reader API over a profiler folder, printed as JSON. Usage: compat_queries.py <root> <queries.json>

queries: [{"reader": "system"|"framework", "call": "get_events", "args": [...], "kwargs": {...}}, ...]
with "unit" given by name ("SECONDS"...). Events come back sorted (1.0.34 returns them in file order)."""

import json
import os
import sys

os.environ["SMDEBUG_LOG_LEVEL"] = "error"  # 1.0.34 logs to stdout

from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader  # noqa: E402
from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader  # noqa: E402
from smdebug.profiler.utils import TimeUnits  # noqa: E402


def system_row(e):
    return [e.type, e.name, e.dimension, e.value, e.node_id, e.timestamp]


def framework_row(e):
    return [
        e.event_phase,
        e.event_name,
        e.start_time,
        e.end_time,
        e.duration,
        e.node_id,
        e.pid,
        e.event_args,
        e.file_type,
        e.phase,
    ]


root, queries = sys.argv[1], json.loads(open(sys.argv[2]).read())
readers = {"system": LocalSystemMetricsReader(root), "framework": LocalAlgorithmMetricsReader(root)}
out = []
for q in queries:
    reader = readers[q["reader"]]
    kwargs = dict(q.get("kwargs", {}))
    if "unit" in kwargs:
        kwargs["unit"] = TimeUnits[kwargs["unit"]]
    result = getattr(reader, q["call"])(*q.get("args", []), **kwargs)
    if isinstance(result, list):
        row = system_row if q["reader"] == "system" else framework_row
        result = sorted((row(e) for e in result), key=json.dumps)
    out.append(result)
print(json.dumps(out))

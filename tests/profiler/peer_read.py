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
elif what == "framework":
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader

    r = LocalAlgorithmMetricsReader(root)
    events = r.get_events(0, 4102444800 * 10**6)
    out = {
        "events": [
            [e.event_phase, e.event_name, e.start_time, e.end_time, e.node_id, e.pid, e.event_args, e.file_type]
            for e in events
        ],
    }
    if len(sys.argv) > 4:
        out["step_interval"] = list(r._get_time_interval_for_step(int(sys.argv[3]), int(sys.argv[4])))
if what in ("system", "framework"):
    print(json.dumps(out))

if what == "python":  # peer_read.py <root> python <framework> <start_step> <end_step> [pyinstrument]
    from smdebug.profiler.analysis.python_profile_analysis import PyinstrumentAnalysis, cProfileAnalysis
    from smdebug.profiler.python_profile_utils import PythonProfileModes

    pyinstrument = len(sys.argv) > 6
    cls = PyinstrumentAnalysis if pyinstrument else cProfileAnalysis
    a = cls(local_profile_dir=f"{root}/framework/{sys.argv[3]}/{'pyinstrument' if pyinstrument else 'cprofile'}")
    listed = a.list_profile_stats()
    stats = a.fetch_profile_stats_by_step(int(sys.argv[4]), int(sys.argv[5]), mode=PythonProfileModes.TRAIN)
    if pyinstrument:

        def walk(frame):
            yield frame["function"]
            for child in frame.get("children", []):
                yield from walk(child)

        names = [n for s in stats or [] if s.json_stats.get("root_frame") for n in walk(s.json_stats["root_frame"])]
        functions = [type("F", (), {"function_name": n}) for n in names]
    else:
        functions = stats.function_stats_list if stats is not None else []
    out = {
        "listed": [
            [
                str(getattr(v, "value", v))
                for v in (r.start_mode, r.start_step, r.start_phase, r.end_mode, r.end_step, r.end_phase)
            ]
            for r in listed.itertuples()
        ],
        "functions": sorted({f.function_name for f in functions}),
    }
    print(json.dumps(out))

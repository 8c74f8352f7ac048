"""Run by 1.0.34's interpreter and by ours (each importing its own smdebug): the Python-profile
analysis API over one profiler's stats folder, printed as JSON.
Usage: python_profile_queries.py <stats folder: <root>/framework/<framework>/<profiler>>[,<s3 url>,<local dir>] ...
(a list, one entry per folder; with an S3 URL of the profiler root the stats are downloaded to the local dir)"""

import json
import math
import os
import sys

os.environ["SMDEBUG_LOG_LEVEL"] = "error"

from smdebug.profiler.analysis.python_profile_analysis import PyinstrumentAnalysis, cProfileAnalysis  # noqa: E402
from smdebug.profiler.python_profile_utils import PythonProfileModes, StepPhase  # noqa: E402


def plain(v):
    v = getattr(v, "value", v)  # StepPhase
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return v.item() if hasattr(v, "item") else v


def listed(a, df):
    cols = [c for c in df.columns if c != "stats_path"]
    return {
        "columns": list(df.columns),
        "rows": sorted(
            (
                [plain(x) for x in r] + [os.path.relpath(p, a.python_stats_reader.profile_dir)]
                for r, p in zip(df[cols].itertuples(index=False), df["stats_path"])
            ),
            key=json.dumps,
        ),
    }


def functions(profiler, stats):
    if stats is None:
        return None
    if profiler == "pyinstrument":

        def walk(frame):
            yield frame["function"]
            for child in frame.get("children", []):
                yield from walk(child)

        return {
            "intervals": len(stats),
            "html": sorted(os.path.basename(s.html_file_path) for s in stats),
            "functions": sorted(
                {n for s in stats if s.json_stats.get("root_frame") for n in walk(s.json_stats["root_frame"])}
            ),
        }
    rows = {
        f.function_name.rsplit(":", 1)[-1] if "(" in f.function_name else f.function_name: [f.prim_calls, f.total_calls]
        for f in stats.function_stats_list
    }
    mine = {k: v for k, v in rows.items() if k.endswith(("(forward)", "(backward)", "(<genexpr>)"))}
    return {"n": len(stats.function_stats_list), "ours": mine}


def query(spec):
    folder, *remote = spec.split(",")
    profiler = os.path.basename(folder.rstrip("/"))
    cls = PyinstrumentAnalysis if profiler == "pyinstrument" else cProfileAnalysis
    a = cls(local_profile_dir=remote[1], s3_path=remote[0]) if remote else cls(local_profile_dir=folder)
    df = a.list_profile_stats()
    starts = sorted(df["start_time_since_epoch_in_micros"].tolist())
    out = {
        "listed": listed(a, df),
        "node_ids": a.list_available_node_ids(),
        "by_step_2_3": functions(profiler, a.fetch_profile_stats_by_step(2, 3)),
        "by_step_3": functions(profiler, a.fetch_profile_stats_by_step(3)),
        "by_step_2_fwd": functions(profiler, a.fetch_profile_stats_by_step(2, 2, end_phase=StepPhase.FORWARD_PASS_END)),
        "by_step_9": functions(profiler, a.fetch_profile_stats_by_step(9, 9)),
        "pre_step_zero": functions(profiler, a.fetch_pre_step_zero_profile_stats()),
        "post_hook_close": functions(profiler, a.fetch_post_hook_close_profile_stats()),
        "between_train": functions(
            profiler, a.fetch_profile_stats_between_modes(PythonProfileModes.TRAIN, PythonProfileModes.TRAIN)
        ),
        "by_time": functions(profiler, a.fetch_profile_stats_by_time(starts[1] / 1e6, starts[2] / 1e6)),
    }
    if profiler == "cprofile":
        out["by_training_phase"] = sorted([int(s), int(e)] for s, e in a.fetch_profile_stats_by_training_phase())
        out["by_job_phase"] = {k: functions(profiler, v) for k, v in a.fetch_profile_stats_by_job_phase().items()}
    return out


stdout, sys.stdout = sys.stdout, sys.stderr  # 1.0.34 prints "No stats were found..."
answers = [query(spec) for spec in sys.argv[1:]]
sys.stdout = stdout
print(json.dumps(answers))

"""The least that one 5-minute window of framework events costs in 1.0.34's layout, in a fresh
process: listing the hour folders, the files' times from their names, reading the window's files
(1.0.34's rule: names within 3 minutes of the window, and the next one), and decoding them with
orjson, with no smdebug at all.
The profile is the one ``bench_profiler_read.py --keep DIR`` writes.

    .venv/bin/python bench/profiler_read_floor.py DIR/day [ROUNDS]

Prints the CPU milliseconds of each stage, cumulative, for the first round (a fresh process, as
the benchmark measures) and the median of the later rounds (warm).
"""

from __future__ import annotations

import bisect
import gc
import os
import sys
import time

import orjson

START_S = 1_790_000_040  # as bench_profiler_read.py
MARGIN_US = 180_000_000


def one_window(root: str, start_us: int, end_us: int) -> dict:
    c0 = time.process_time()
    top = os.path.join(root, "framework", "pevents")
    names = [e.path for d in os.scandir(top) for e in os.scandir(d.path)]
    c1 = time.process_time()
    timed = sorted((int(p[p.rfind("/") + 1 : p.index("_", p.rfind("/"))]), p) for p in names)
    stamps = [t for t, _ in timed]
    lo = bisect.bisect_left(stamps, start_us - MARGIN_US)
    hi = min(bisect.bisect_right(stamps, end_us + MARGIN_US) + 1, len(timed))
    c2 = time.process_time()
    datas = []
    for _, path in timed[lo:hi]:
        with open(path, "rb") as f:
            datas.append(f.read())
    c3 = time.process_time()
    events = sum(len(orjson.loads(d)) for d in datas)
    c4 = time.process_time()
    return {
        "list": c1 - c0,
        "+ names": c2 - c0,
        "+ read": c3 - c0,
        "+ orjson": c4 - c0,
        "files": hi - lo,
        "events": events,
    }


def main() -> None:
    root = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    mid = START_S * 1_000_000 + int(24 * 1800e6)
    gc.collect()
    runs = [one_window(root, mid, mid + 300_000_000) for _ in range(rounds)]
    first, later = runs[0], runs[1:]
    print(f"{first['files']} files, {first['events']} lines decoded")
    for stage in ("list", "+ names", "+ read", "+ orjson"):
        warm = sorted(r[stage] for r in later)[len(later) // 2] if later else float("nan")
        print(f"{stage:10s} fresh {first[stage] * 1e3:6.2f} ms   warm {warm * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()

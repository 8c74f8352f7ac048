"""Helpers: read our timeline files back (plain JSON) as absolute-time events."""

from __future__ import annotations

import json
from pathlib import Path


def read_events(root) -> list[dict]:
    """Every duration event under <root>/framework/pevents, with phase, start and end in µs since the epoch."""
    out = []
    for f in sorted(Path(root, "framework", "pevents").rglob("*_pythontimeline.json")):
        doc = json.loads(f.read_text())
        base = doc[0]["args"]["start_time_since_epoch_in_micros"]
        phases = {
            e["pid"]: e["args"]["name"] for e in doc if e["name"] == "process_name" and "name" in e.get("args", {})
        }
        for e in doc:
            if e["ph"] == "X":
                out.append(
                    {
                        "phase": phases[e["pid"]],
                        "name": e["name"],
                        "start": base + e["ts"],
                        "end": base + e["ts"] + e["dur"],
                        "args": e.get("args", {}),
                        "file": f.name,
                    }
                )
    return out


def steps_of(events, phase="Step:ModeKeys.TRAIN") -> dict[int, dict]:
    return {int(e["args"]["step_num"]): e for e in events if e["phase"] == phase}

"""The listed files of one profiler stream, for :class:`~smdebug.profiler.reading.ProfileFolder`.

A 24-hour profile lists thousands of files, and a query reads a few of them: the listing is kept
as columns (each key's time and node in dicts: strings and ints, no object per file for the
garbage collector to track and walk), and a :class:`File`, which holds a file's parse state, is
made only for the files a query asks for. Each node's files sorted by time are built when first
needed.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["File", "FileList"]


@dataclass(slots=True)
class File:
    key: str
    time_us: int  # system: the minute of the file name; framework: the last event end of the name
    node_id: str
    suffix: str = ""  # framework files: "pythontimeline.json", "model_timeline.json"...
    stamp: tuple | None = None  # (size, mtime_ns) of a local file when it was parsed
    parsed: object = None  # SystemChunk | FrameworkEvents once parsed


class FileList:
    """The files of one stream, by key, in the order they were first listed."""

    def __init__(self, info: Callable[[str], tuple | None]):
        self._info = info  # key -> (time_us, node_id[, suffix]), or None for a key that is not a file of the stream
        self.time: dict[str, int] = {}
        self.node: dict[str, str] = {}
        self.suffix: dict[str, str] = {}  # a framework file's suffix (the third item of its info)
        self.opened: dict[str, File] = {}  # the File of each key a query asked for
        self._by_node: dict[str, tuple[list[int], list[str]]] | None = None

    def __len__(self) -> int:
        return len(self.time)

    def update(self, keys: Iterable[str], present: set[str] | None) -> None:
        """Forget the files whose keys are not in ``present`` (None: keep all), then add the files
        among ``keys`` not known yet."""
        if present is not None:
            for gone in [k for k in self.time if k not in present]:  # deleted since: forget it
                del self.time[gone], self.node[gone]
                self.suffix.pop(gone, None)
                self.opened.pop(gone, None)
        time, node, suffix, info = self.time, self.node, self.suffix, self._info
        for key in keys:
            if key not in time and (found := info(key)) is not None:
                time[key] = found[0]
                node[key] = found[1]
                if len(found) > 2:
                    suffix[key] = found[2]  # (a str, not a tuple: nothing for the garbage collector)
        self._by_node = None

    def file(self, key: str) -> File:
        f = self.opened.get(key)
        if f is None:
            f = self.opened[key] = File(key, self.time[key], self.node[key], self.suffix.get(key, ""))
        return f

    def files(self, keys: Iterable[str]) -> list[File]:
        return [self.file(k) for k in keys]

    def by_node(self) -> dict[str, tuple[list[int], list[str]]]:
        """Each node's ``(times, keys)``, sorted by (time, key). Keys are listed in key order, which
        is time order when the times rise strictly: then no sort is needed."""
        if self._by_node is None:
            nodes = set(self.node.values())
            groups: dict[str, list[str]] = {}
            if len(nodes) == 1:
                groups[nodes.pop()] = list(self.time)
            else:
                for key, node in self.node.items():
                    groups.setdefault(node, []).append(key)
            out = {}
            time = self.time
            for node, keys in groups.items():
                times = list(map(time.__getitem__, keys))
                if not all(map(operator.lt, times, itertools.islice(times, 1, None))):
                    keys.sort(key=lambda k: (time[k], k))
                    times = list(map(time.__getitem__, keys))
                out[node] = (times, keys)
            self._by_node = out
        return self._by_node

    def position(self, key: str) -> int:
        """The index of ``key`` in its node's sorted keys."""
        times, keys = self.by_node()[self.node[key]]
        i = bisect.bisect_left(times, self.time[key])
        while keys[i] != key:
            i += 1
        return i

    def first_per_node(self, newest: bool = False) -> list[str]:
        """Each node's file with the smallest time (``newest``: the largest); of files with the
        same time, the first listed."""
        best: dict[str, str] = {}
        time = self.time
        for key, node in self.node.items():
            other = best.get(node)
            if other is None or (time[key] > time[other] if newest else time[key] < time[other]):
                best[node] = key
        return list(best.values())

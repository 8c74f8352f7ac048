"""Trial: steps, modes, workers, collections and tensors of one training job's output (its options:
trials.options)."""

from __future__ import annotations

import logging
import os
import time
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from smdebug.codec.index import IndexDecoder
from smdebug.core.config.collection import Collection
from smdebug.core.config.collection_manager import CollectionManager
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import (
    COLLECTIONS_PREFIX,
    END_OF_JOB,
    INDEX_PREFIX,
    index_bucket_key,
    parse_index_key,
    worker_from_collections_key,
)
from smdebug.core.tensor import StepState
from smdebug.exceptions import (
    IndexReaderException,
    MissingCollectionFiles,
    NoMoreData,
    ObjectNotFound,
    StepUnavailable,
    TensorUnavailable,
)
from smdebug.storage import Store
from smdebug.trials.consolidated import Coverage, drop_stale, open_consolidated
from smdebug.trials.held import HeldValues, hold
from smdebug.trials.index_state import IndexState
from smdebug.trials.options import check_range, collection_wait_seconds, incomplete_step_window, parse_poll_interval
from smdebug.trials.reader import RecordReader, StepValue, ValueKey
from smdebug.trials.records import Where
from smdebug.trials.tensor import Tensor

__all__ = ["Trial"]

logger = logging.getLogger("smdebug")


class Trial:
    """Reads a trial folder (or S3 prefix) written by an smdebug hook or FileWriter.

    It sees steps written after it was opened: queries refresh the index unless refresh is
    turned off (:func:`smdebug.analysis.utils.no_refresh`) or the job has ended and every step
    has been read. ``poll_interval`` (seconds; default $SMDEBUG_POLL_INTERVAL, else 1) is how often
    a wait for new steps looks at storage (the attribute ``poll_interval``).
    """

    def __init__(
        self,
        name: str,
        store: Store,
        range_steps: tuple[int | None, int | None] | None = None,
        parallel: bool = True,
        check: bool = False,
        index_mode: bool = True,
        cache: bool = False,
        collection_wait_timeout: float | None = None,
        poll_interval: float | None = None,
    ) -> None:
        self.name = name
        self.store = store
        self.path = store.url
        self.trial_dir = self.path
        self.range_steps = check_range(range_steps)
        self.parallel = parallel
        self.check = check
        self.index_mode = index_mode
        self.cache = cache
        self.dynamic_refresh = True
        self.loaded_all_steps = False
        self.last_complete_step = -1
        self.num_workers = 1
        self.collection_manager: CollectionManager | None = None
        self.worker_set: set[str] = set()
        self.bad_index_files: dict[str, str] = {}
        self._index = IndexState()
        self._decoder = IndexDecoder()  # files of one layout parse only their meta section
        self._seen_keys: set[str] = set()
        self._tensors: dict[str, Tensor] = {}
        self._reader = RecordReader(store, self._stale_chunks)  # the one batched read of records
        self._list_after: str | None = None
        self._coverage: Coverage | None = None  # what consolidated index objects serve, read at open
        if self.range_steps and self.range_steps[0]:
            first = self.range_steps[0] - 1
            self._list_after = f"{index_bucket_key(first)}{first:012d}_~"
        self._window = incomplete_step_window()
        self.poll_interval = parse_poll_interval(poll_interval)
        self._load_collections(collection_wait_seconds(collection_wait_timeout))
        self.refresh_data()

    # ------------------------------------------------------------------ loading
    def _load_collections(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            keys = [k for k in self.store.list(COLLECTIONS_PREFIX) if worker_from_collections_key(k)]
            if keys:
                break
            if self._training_ended() or time.monotonic() >= deadline:
                raise MissingCollectionFiles(
                    self.path
                    if os.path.exists(self.path) or "://" in self.path
                    else f"{self.path} (which does not exist)"
                )
            time.sleep(min(self.poll_interval, max(deadline - time.monotonic(), 0.01)))
        first = keys[0]
        self.collection_manager = CollectionManager.load_from_string(
            self.store.read(first), where=self.store.describe(first)
        )
        self.num_workers = self.collection_manager.get_num_workers()
        self.worker_set.update(worker_from_collections_key(k) for k in keys)  # type: ignore[misc]  # keys filtered above

    def _training_ended(self) -> bool:
        return self.store.exists(END_OF_JOB)

    def _in_range(self, step: int) -> bool:
        if self.range_steps is None:
            return True
        lo, hi = self.range_steps
        return (lo is None or step >= lo) and (hi is None or step < hi)

    def refresh_data(self) -> None:
        """Read index files that appeared since the last refresh."""
        listed = []
        if self._coverage is None:  # the consolidated index objects, read once at open
            self._coverage = open_consolidated(
                self.store, self._index, self.worker_set, self.num_workers, self.range_steps
            )
            self._list_after = max(self._list_after or "", self._coverage.list_after or "") or None
            listed, self._coverage.extra = self._coverage.extra, []  # steps written after their bucket's object
        listed += [(k, parse_index_key(k)) for k in self.store.list(INDEX_PREFIX, start_after=self._list_after)]
        new = []
        for k, sw in listed:
            if k in self._seen_keys or sw is None or not self._in_range(sw[0]) or self._coverage.covers(*sw):
                continue
            new.append((k, sw))
        if new:
            self._add_index_files(new)
        self._update_completeness()

    def _add_index_files(self, new: list[tuple[str, tuple[int, str]]]) -> None:
        blobs = self.store.read_many([k for k, _ in new])
        for (key, (step, worker)), blob in zip(new, blobs):
            where = Where(self.store, key)
            try:
                if isinstance(blob, Exception):
                    if isinstance(blob, ObjectNotFound):
                        continue  # removed between list and read
                    raise blob
                parsed = self._decoder.decode(blob, where)  # type: ignore[arg-type]  # a Where formats as the str
                self._index.add(key, step, worker, parsed, where)  # type: ignore[arg-type]  # (as above)
            except IndexReaderException as exc:
                if key not in self.bad_index_files:
                    logger.warning("smdebug: skipping unreadable index file: %s", exc)
                self.bad_index_files[key] = str(exc)
                continue  # not marked seen: a file still being written is read again later
            self.bad_index_files.pop(key, None)
            self._seen_keys.add(key)
            self.worker_set.add(worker)

    def _update_completeness(self) -> None:
        self.last_complete_step = self._index.complete_through(self.last_complete_step, self.num_workers, self._window)
        if self.last_complete_step >= 0 and not self.bad_index_files:
            s = self.last_complete_step
            self._list_after = max(self._list_after or "", f"{index_bucket_key(s)}{s:012d}_~")

    def maybe_refresh(self, name: str | None = None) -> None:
        if self.loaded_all_steps or not self.dynamic_refresh:
            return
        ended = self._training_ended()
        self.refresh_data()
        if ended:
            self.loaded_all_steps = True
            if self._index.by_step:
                self.last_complete_step = max(self.last_complete_step, self._index.max_step())

    def refresh_tensor(self, tname: str, steps: Iterable[int] | None = None) -> None:
        self.refresh_data()

    # ------------------------------------------------------------------ tensors
    def _tensors_matching_regex(self, regex: str | Iterable[str], arg: str = "regex") -> set[str]:
        from smdebug.patterns import names_matching

        return names_matching(self._index.names, regex, arg=arg)  # RE2: linear in the name, re.search's semantics

    @staticmethod
    def _collection_name(collection: Collection | str) -> str:
        if isinstance(collection, Collection):
            return collection.name
        if isinstance(collection, str):
            return collection
        raise TypeError(f"Invalid argument type for collection {type(collection).__name__}")

    def _tensors_in_collection(self, collection: Collection | str) -> set[str]:
        coll = self.collection(self._collection_name(collection))
        names = set(coll.tensor_names)
        if coll.include_regex:
            names |= self._tensors_matching_regex(coll.include_regex, f"include_regex of collection {coll.name!r}")
        return names

    def tensor_names(
        self,
        step: int | None = None,
        mode: ModeKeys | None = ModeKeys.GLOBAL,
        regex: str | Iterable[str] | None = None,
        collection: Collection | str | None = None,
        *,
        show_prefixed_tensors: bool = False,
    ) -> list[str]:
        """Names of saved tensors, filtered by step (of ``mode``), mode, regex or collection."""
        self.maybe_refresh()
        mode = mode or ModeKeys.GLOBAL
        idx = self._index
        if regex is not None and collection is not None:
            raise ValueError("Only one of `regex` or `collection` can be passed to this method")
        if step is None:
            names = set(idx.names) if mode == ModeKeys.GLOBAL else set(idx.mode_names.get(mode, ()))
        else:
            g = step if mode == ModeKeys.GLOBAL else idx.mode_to_global.get(mode, {}).get(step)
            names = idx.names_at(g) if g is not None else set()
        if collection is not None:
            names &= self._tensors_in_collection(collection)
        elif regex is not None:
            names &= self._tensors_matching_regex(regex)
        return sorted(names)

    tensors = tensor_names

    def has_tensor(self, tname: str) -> bool:
        if tname not in self._index.names:
            self.maybe_refresh(tname)
        return tname in self._index.names

    def tensor(self, tname: str) -> Tensor:
        if not self.has_tensor(tname):
            raise TensorUnavailable(tname)
        t = self._tensors.get(tname)
        if t is None:
            t = self._tensors[tname] = Tensor(tname, trial=self, cache=self.cache)
        return t

    # ------------------------------------------------------------------ steps and modes
    def _is_complete(self, g: int) -> bool:
        return self.loaded_all_steps or self.last_complete_step >= g or self._index.worker_count(g) >= self.num_workers

    def _all_steps(self, mode: ModeKeys | None = ModeKeys.GLOBAL) -> list[int]:
        mode = mode or ModeKeys.GLOBAL
        self.maybe_refresh()
        if mode == ModeKeys.GLOBAL:
            return sorted(self._index.global_to_mode)
        return sorted(self._index.mode_to_global.get(mode, ()))

    def _global_step_currently(self, mode: ModeKeys | None, mode_step: int) -> Any:  # int, or None when unknown
        if mode is None or mode == ModeKeys.GLOBAL:
            return mode_step
        return self._index.mode_to_global.get(mode, {}).get(mode_step)

    def steps(self, mode: ModeKeys | None = ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> list[int]:
        """Complete steps: global steps, or mode steps of ``mode`` (None means GLOBAL)."""
        mode = mode or ModeKeys.GLOBAL
        steps = self._all_steps(mode)
        if show_incomplete_steps:
            return steps
        return [s for s in steps if self._is_complete(self._global_step_currently(mode, s))]

    def modes(self) -> list[ModeKeys]:
        self.maybe_refresh()
        return sorted(self._index.mode_to_global, key=lambda m: m.value)

    def global_step(self, mode: ModeKeys | None, mode_step: int) -> int | None:
        s = self._global_step_currently(mode, mode_step)
        if s is None:
            self.maybe_refresh()
            s = self._global_step_currently(mode, mode_step)
        return s

    def mode_modestep(self, global_step: int) -> tuple[ModeKeys | None, int | None]:
        x = self._index.global_to_mode.get(global_step)
        if x is None:
            self.maybe_refresh()
            x = self._index.global_to_mode.get(global_step)
        return x if x is not None else (None, None)

    def mode_step(self, global_step: int) -> int | None:
        return self.mode_modestep(global_step)[1]

    def mode(self, global_step: int) -> ModeKeys | None:
        return self.mode_modestep(global_step)[0]

    def workers(self) -> list[str]:
        self.maybe_refresh()
        return sorted(self.worker_set)

    def collections(self) -> dict[str, Collection]:
        return self.collection_manager.collections  # type: ignore[union-attr]  # loaded in __init__

    def collection(self, coll_name: str) -> Collection:
        return self.collection_manager.get(coll_name)  # type: ignore[union-attr]  # loaded in __init__

    def has_passed_step(self, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> StepState:
        """AVAILABLE (complete), NOT_YET_AVAILABLE (may still come) or UNAVAILABLE (never will)."""
        all_steps = self.steps(mode=mode, show_incomplete_steps=True)
        i = bisect_left(all_steps, step)
        if i < len(all_steps):
            g = self._global_step_currently(mode, all_steps[i])
            if all_steps[i] > step:
                return StepState.UNAVAILABLE if self.last_complete_step >= g else StepState.NOT_YET_AVAILABLE
            return StepState.AVAILABLE if self._is_complete(g) else StepState.NOT_YET_AVAILABLE
        return StepState.UNAVAILABLE if self.loaded_all_steps else StepState.NOT_YET_AVAILABLE

    def wait_for_steps(
        self, required_steps: Iterable[int], mode: ModeKeys = ModeKeys.GLOBAL, timeout: float | None = None
    ) -> None:
        """Block until each step is available; StepUnavailable / NoMoreData when it never will be.

        ``timeout`` (seconds, default none) bounds the wait with a TimeoutError.
        """
        from smdebug.core.utils import refresh

        deadline = None if timeout is None else time.monotonic() + timeout
        with refresh(self):
            for step in required_steps:
                while True:
                    state = self.has_passed_step(step, mode)
                    if state == StepState.AVAILABLE:
                        break
                    if state == StepState.UNAVAILABLE:
                        if not self.loaded_all_steps:
                            raise StepUnavailable(step, mode)
                        avail = self._all_steps(mode)
                        last = avail[-1] if avail else -1
                        if step < last:
                            raise StepUnavailable(step, mode)
                        raise NoMoreData(step, mode, last)
                    if deadline is not None and time.monotonic() >= deadline:
                        raise TimeoutError(f"step {step} of mode {mode.name} not available after {timeout} s")
                    time.sleep(self.poll_interval)

    # ------------------------------------------------------------------ values
    def _check_step_readable(
        self, step: int, worker: str | None = None, mode: ModeKeys | None = ModeKeys.GLOBAL
    ) -> None:
        """Raise the error of an unreadable index file of this step (and worker, if given). A step
        of another mode is matched by global step when known; when not, any unreadable index
        file of a global step the trial has not mapped may hold it, and the error says so."""
        mode = mode or ModeKeys.GLOBAL
        g = step if mode == ModeKeys.GLOBAL else self._global_step_currently(mode, step)
        unknown = []
        for key, msg in self.bad_index_files.items():
            s, w = parse_index_key(key)  # type: ignore[misc]  # a listed index key parses
            if worker is not None and w != worker:
                continue
            if s == g:
                raise IndexReaderException(msg)
            if g is None and s not in self._index.global_to_mode and self._may_hold(mode, step, s):
                unknown.append(msg)
        if unknown:
            raise IndexReaderException(
                f"step {step} of mode {mode.name} is in no readable index file, and {len(unknown)} index file(s) "
                f"of this trial cannot be read (it may be in one): {unknown[0]}"
            )

    def _may_hold(self, mode: ModeKeys, mode_step: int, g: int) -> bool:
        """Whether global step ``g`` can be ``mode_step`` of ``mode``, given the steps of that mode known
        (mode steps grow with global steps)."""
        m2g = self._index.mode_to_global.get(mode, {})
        below = [gg for ms, gg in m2g.items() if ms < mode_step]
        above = [gg for ms, gg in m2g.items() if ms > mode_step]
        return (not below or max(below) < g) and (not above or min(above) > g)

    def _stale_chunks(self, files: list[Any]) -> bool:
        """After a failed read of records of ``files``: see :func:`trials.consolidated.drop_stale`."""
        return drop_stale(self.store, files)

    # ------------------------------------------------------------------ batched reads
    def read(
        self,
        keys: list[ValueKey],
        *,
        reduction: str | None = None,
        abs: bool = False,
        reductions_if_no_value: bool = False,
    ) -> list[StepValue]:
        """The saved values of ``keys`` (:class:`~smdebug.trials.ValueKey`: name, global step, worker or
        None for every worker) in one batched read, each payload checked against its index's CRC32C;
        what is not saved is left out. With ``reduction`` (and ``abs``), the saved reduction where there
        is one (``from_reduction``), else the raw value; with ``reductions_if_no_value``, a tensor saved
        only as reductions gives those. Arrays may be read-only views of the bytes read."""
        return self._reader.values(self._index.by_step, keys, reduction, abs, reductions_if_no_value)

    def hold(self, wanted: dict[str, Any]) -> HeldValues:
        """Read ``wanted`` ({tensor name: global steps}) in one batched read and keep the values with
        their tensors (``tensor.value(step)`` answers from memory) until ``.release()``."""
        return hold(self, wanted)

    @property
    def index_version(self) -> int:
        """Grows whenever the trial takes in new index data (what was listed may have changed)."""
        return len(self._index.files) + len(self._index.chunks)

    def __repr__(self) -> str:
        return f"<smdebug.trials.Trial name={self.name!r} path={self.path!r}>"

    def __hash__(self) -> int:
        return hash((self.name, self.path))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trial):
            return NotImplemented
        return (self.name, self.path) == (other.name, other.path)

"""FileWriter: one event file and its index for one (global step, worker), written on close."""

from __future__ import annotations

import numpy as np

from smdebug.codec.event import encode_step_records, encode_tensor_record_chunks, mode_metadata
from smdebug.codec.index import IndexBuilder
from smdebug.codec.record_crc import payload_crcs
from smdebug.codec.tensor import to_numpy
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import event_key, index_key
from smdebug.exceptions import SMDebugRuntimeError, SMDebugValueError
from smdebug.storage import Store, open_store

__all__ = ["FileWriter"]


class FileWriter:
    """Collects the records of one step of one worker and writes them when closed.

    The event file is written before its index, each atomically, so a visible index always
    points at a complete event file. Nothing is written for a step where nothing was saved.
    A (step, worker) already in the trial is never replaced: close raises
    SMDebugRuntimeError and writes nothing (the hook never writes a step twice; another run's
    files in the same folder are kept).
    """

    def __init__(
        self,
        trial_dir,
        worker="worker_0",
        step=0,
        wtype="events",
        mode=ModeKeys.GLOBAL,
        max_queue=10,
        flush_secs=120,
        verbose=False,
        write_checksum=False,
        store: Store | None = None,
        consolidator=None,
    ):
        if wtype != "events":
            raise SMDebugValueError(f"Writer type not supported {wtype!r}: only 'events' here")
        self.trial_dir = trial_dir
        self.worker = worker
        self.step = int(step)
        self.wtype = wtype
        self.mode = mode
        self.write_checksum = write_checksum
        self._store = store if store is not None else open_store(trial_dir)
        self._event_key = event_key(self.step, worker)
        self._index_key = index_key(self.step, worker)
        self._chunks: list[bytes] = []
        self._offset = 0
        self._index = IndexBuilder()
        self._md_cache: dict[tuple, bytes] = {}
        self._closed = False
        self._consolidator = consolidator  # a core.output.consolidate.BucketConsolidator of this worker

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def _check(self, mode, mode_step) -> tuple[ModeKeys, int]:
        if self._closed:
            raise SMDebugRuntimeError(f"FileWriter for {self._event_key} is closed")
        if mode is None:
            mode = ModeKeys.GLOBAL
        if not isinstance(mode, ModeKeys):
            raise SMDebugValueError(f"mode={mode!r} must be one of {', '.join('ModeKeys.' + m.name for m in ModeKeys)}")
        return mode, self.step if mode_step is None else int(mode_step)

    def write_tensor(self, tdata, tname, write_index=True, mode=ModeKeys.GLOBAL, mode_step=None, timestamp=None):
        mode, mode_step = self._check(mode, mode_step)
        arr = to_numpy(tdata)
        md = self._md_cache.get((mode, mode_step))
        if md is None:
            md = self._md_cache[(mode, mode_step)] = mode_metadata(mode, mode_step)
        chunks = encode_tensor_record_chunks(tname, arr, self.step, md, timestamp, self.write_checksum)
        length = sum(c.nbytes if isinstance(c, np.ndarray) else len(c) for c in chunks)
        if write_index:
            self._index.records_in(self._event_key, mode, mode_step)
            self._index.add(tname, self._offset, length)
        self._chunks.extend(chunks)
        self._offset += length

    def write_tensors(self, records, mode=ModeKeys.GLOBAL, mode_step=None) -> None:
        """Write many tensors of one mode step: ``records`` is a list of (name, array, wall time
        or None). The same as one write_tensor per record, but far faster when the same tensors
        are saved at every step."""
        mode, mode_step = self._check(mode, mode_step)
        if not records:
            return
        names, arrays, walls = (list(c) for c in zip(*records))
        arrays = [a if type(a) is np.ndarray else to_numpy(a) for a in arrays]
        enc = None
        if names and not self.write_checksum and not self._chunks:
            enc = encode_step_records(names, arrays, self.step, mode_metadata(mode, mode_step), walls)
        if enc is None:
            for name, arr, wt in zip(names, arrays, walls):
                self.write_tensor(arr, name, mode=mode, mode_step=mode_step, timestamp=wt)
            return
        chunks, lengths = enc
        self._index.records_in(self._event_key, mode, mode_step)
        self._offset = self._index.add_all(names, self._offset, lengths)
        self._chunks.extend(chunks)

    def write_shape(self, name, shape, mode=ModeKeys.GLOBAL, mode_step=None, original_name=None):
        mode, mode_step = self._check(mode, mode_step)
        self._index.shapes_of(mode, mode_step)
        self._index.add_shape(name, name if original_name is None else original_name, shape)

    def flush(self):
        """Records are held in memory until close; kept for API compatibility."""

    def name(self) -> str:
        return self._store.describe(self._event_key)

    def close(self):
        if self._closed:
            return
        self._closed = True
        first = self._event_key if self._chunks else self._index_key
        index = self._index
        if (self._chunks or index.tags or index.shapes) and self._store.exists(first):
            self._chunks = []
            raise SMDebugRuntimeError(
                f"{self._store.describe(first)} exists: step {self.step} of {self.worker} is written "
                "already and is not replaced (a second run in the same folder? give it its own folder)"
            )
        if self._chunks:
            self._store.write_chunks(self._event_key, self._chunks)
        if not index.empty:
            if index.tags:  # each payload's CRC32C: readers verify it
                index.crcs = payload_crcs(self._chunks, index.starts, index.lengths)
            if self._consolidator is not None:
                self._consolidator.before_write(self.step)
            self._store.write(self._index_key, index.encode())
            if self._consolidator is not None:
                self._consolidator.add(self.step, index.parsed())
        self._chunks = []

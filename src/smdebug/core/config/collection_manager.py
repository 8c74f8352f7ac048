"""A set of collections plus ``_meta`` (num_workers), as written to collections/000000000/."""

from __future__ import annotations

import json
import os
from typing import Any

from smdebug.codec.index import decode_collections_json
from smdebug.core.config.collection import Collection
from smdebug.core.output.locations import COLLECTIONS_PREFIX
from smdebug.exceptions import IndexReaderException, SMDebugError, SMDebugTypeError

__all__ = ["CollectionManager"]


class CollectionManager:
    def __init__(self, collections: dict[str, Collection] | None = None, create_default: bool = False) -> None:
        self.collections: dict[str, Collection] = {} if collections is None else collections
        self._meta = {"num_workers": 1}
        if create_default:
            self.add("default")

    def create_collection(self, name: str, cls: type[Collection] = Collection) -> None:
        if name not in self.collections:
            self.collections[name] = cls(name)

    def get_collections(self) -> dict[str, Collection]:
        return self.collections

    def add(self, arg: Collection | str) -> None:
        if isinstance(arg, str):
            self.create_collection(arg)
        elif isinstance(arg, Collection):
            self.collections[arg.name] = arg
        else:
            raise SMDebugTypeError(f"CollectionManager.add takes a name or a Collection, got {arg!r}")

    def get(self, name: str, create: bool = True) -> Collection:
        if name not in self.collections:
            if not create:
                raise SMDebugError(f"Collection {name} has not been created")
            self.create_collection(name)
        return self.collections[name]

    def update_meta(self, meta: dict) -> None:
        if not isinstance(meta, dict):
            raise SMDebugTypeError(f"meta should be a dict, got {type(meta).__name__}")
        self._meta.update(meta)

    def get_num_workers(self) -> int:
        return int(self._meta["num_workers"])

    def set_num_workers(self, num_workers: int) -> None:
        self._meta["num_workers"] = int(num_workers)

    def to_json_dict(self) -> dict:
        return {
            "collections": {n: c.to_json_dict() for n, c in self.collections.items()},
            "_meta": dict(self._meta),
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json_dict()).encode("utf-8")

    def export(self, out_dir: str, filename: str, store: Any = None) -> None:
        """Write ``<out_dir>/collections/000000000/<filename>`` (atomically); ``store``: the store
        of ``out_dir`` when the caller has it open."""
        if store is None:
            from smdebug.storage import open_store

            store = open_store(out_dir)
        store.write(COLLECTIONS_PREFIX + filename, self.to_bytes())

    @classmethod
    def load(cls, filename: str, collection_class: type[Collection] = Collection) -> CollectionManager:
        with open(os.path.expanduser(filename), "rb") as f:
            return cls.load_from_string(f.read(), collection_class, where=str(filename))

    @classmethod
    def load_from_string(
        cls, s: str | bytes, collection_class: type[Collection] = Collection, where: str = "<collections json>"
    ) -> CollectionManager:
        data = s.encode("utf-8") if isinstance(s, str) else s
        params = decode_collections_json(data, where)
        cm = cls()
        try:
            for c_dict in (params.get("collections") or {}).values():
                cm.add(collection_class.from_dict(c_dict))
        except (SMDebugError, TypeError, ValueError, KeyError) as exc:
            raise IndexReaderException(f"{where}: {exc}") from None
        cm.update_meta(params.get("_meta") or {})
        return cm

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CollectionManager):
            return NotImplemented
        return self.collections == other.collections

    def __repr__(self) -> str:
        return f"<class CollectionManager: collection_names={list(self.collections)}>"

"""Collections: named groups of tensors with their own save and reduction configs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug.patterns import compile as compile_pattern

__all__ = ["Collection", "CollectionKeys"]


class CollectionKeys:
    DEFAULT = "default"
    ALL = "all"
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    WEIGHTS = "weights"
    GRADIENTS = "gradients"
    LOSSES = "losses"
    BIASES = "biases"
    LAYERS = "layers"
    SM_METRICS = "sm_metrics"
    OPTIMIZER_VARIABLES = "optimizer_variables"
    TENSORFLOW_SUMMARIES = "tensorflow_summaries"
    METRICS = "metrics"
    HYPERPARAMETERS = "hyperparameters"
    PREDICTIONS = "predictions"
    LABELS = "labels"
    FEATURE_IMPORTANCE = "feature_importance"
    AVERAGE_SHAP = "average_shap"
    FULL_SHAP = "full_shap"
    TREES = "trees"


SCALAR_COLLECTIONS = {
    CollectionKeys.LOSSES,
    CollectionKeys.METRICS,
    CollectionKeys.FEATURE_IMPORTANCE,
    CollectionKeys.AVERAGE_SHAP,
    CollectionKeys.SM_METRICS,
}
SUMMARIES_COLLECTIONS = {CollectionKeys.TENSORFLOW_SUMMARIES}
SM_METRIC_COLLECTIONS = {CollectionKeys.LOSSES, CollectionKeys.METRICS, CollectionKeys.SM_METRICS}
NON_REDUCTION_COLLECTIONS = SCALAR_COLLECTIONS | SUMMARIES_COLLECTIONS
NON_HISTOGRAM_COLLECTIONS = SCALAR_COLLECTIONS | SUMMARIES_COLLECTIONS
# collections a mode never saves (evaluation and prediction compute no gradients)
_NOT_IN_EVALUATION = frozenset({CollectionKeys.GRADIENTS, CollectionKeys.OPTIMIZER_VARIABLES})
MODE_SKIPS = {ModeKeys.EVAL: _NOT_IN_EVALUATION, ModeKeys.PREDICT: _NOT_IN_EVALUATION}


class Collection:
    """A group of tensors: exact names plus ``include_regex`` patterns (``re.search``)."""

    def __init__(
        self,
        name: str,
        include_regex: Iterable[str] | None = None,
        tensor_names: Iterable[str] | None = None,
        reduction_config: ReductionConfig | None = None,
        save_config: SaveConfig | dict[Any, Any] | None = None,
        save_histogram: bool = True,
    ) -> None:
        self.name = name
        self.include_regex = list(include_regex) if include_regex else []
        self.tensor_names = tensor_names
        self.reduction_config = reduction_config
        self.save_config = save_config
        self.save_histogram = bool(save_histogram)
        self._modules: dict = {}

    # -- framework modules (layers) -----------------------------------------------------------
    def add_module_tensors(self, module: Any, inputs: bool = False, outputs: bool = True) -> None:
        """Save a module's (layer's) inputs and/or outputs in this collection; the hook turns the
        module into its name when the collections are prepared."""
        self._modules[module] = (inputs, outputs)

    @property
    def modules(self) -> dict[Any, tuple[bool, bool]]:
        """module -> (inputs, outputs) given to :meth:`add_module_tensors`."""
        return self._modules

    # -- tensor names -------------------------------------------------------------------------
    @property
    def tensor_names(self) -> set[str]:
        return self._tensor_names

    @tensor_names.setter
    def tensor_names(self, names: Iterable[str] | None) -> None:
        if names is None:
            names = set()
        elif isinstance(names, (list, tuple, frozenset)):
            names = set(names)
        elif not isinstance(names, set):
            raise SMDebugTypeError(f"tensor_names of collection {self.name} can only be a list or set")
        self._tensor_names = names

    def include(self, t: str | Iterable[str]) -> None:
        if isinstance(t, (list, tuple)):
            for item in t:
                self.include(item)
        elif isinstance(t, str):
            compile_pattern(t, arg=f"include_regex of collection {self.name!r}")  # refused here, not mid-training
            self.include_regex.append(t)
            self.__dict__.pop("_compiled", None)
        else:
            raise SMDebugTypeError(f"Collection.include takes a str or a list of str, got {t!r}")

    def has_tensor_name(self, tname: str) -> bool:
        return tname in self._tensor_names

    def add_tensor_name(self, tname: str) -> None:
        self._tensor_names.add(tname)

    def remove_tensor_name(self, tname: str) -> None:
        self._tensor_names.discard(tname)

    def matches(self, tname: str) -> bool:
        """Whether a tensor belongs here: listed by name, or matched by one of the regexes."""
        if tname in self._tensor_names:
            return True
        compiled = self.__dict__.get("_compiled")
        if compiled is None or len(compiled) != len(self.include_regex):
            compiled = [
                compile_pattern(r, arg=f"include_regex of collection {self.name!r}") for r in self.include_regex
            ]
            self.__dict__["_compiled"] = compiled
        return any(c.search(tname) for c in compiled)

    # -- configs ------------------------------------------------------------------------------
    @property
    def reduction_config(self) -> ReductionConfig | None:
        return self._reduction_config

    @reduction_config.setter
    def reduction_config(self, rc: ReductionConfig | None) -> None:
        if rc is not None and not isinstance(rc, ReductionConfig):
            raise SMDebugTypeError(f"reduction_config={rc!r} must be a ReductionConfig")
        self._reduction_config = rc

    @property
    def save_config(self) -> SaveConfig | None:
        return self._save_config

    @save_config.setter
    def save_config(self, sc: SaveConfig | dict[Any, Any] | None) -> None:
        if sc is None or isinstance(sc, SaveConfig):
            self._save_config = sc
        elif isinstance(sc, dict):
            self._save_config = SaveConfig(mode_save_configs=sc)
        else:
            raise SMDebugTypeError(f"save_config={sc!r} must be a SaveConfig or a dict of ModeKeys to SaveConfigMode")

    # -- JSON ---------------------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        return {
            "name": self.name,
            "include_regex": list(self.include_regex),
            "tensor_names": sorted(self._tensor_names),
            "reduction_config": self.reduction_config.to_json_dict() if self.reduction_config else None,
            "save_config": self.save_config.to_json_dict() if self.save_config else None,
            "save_histogram": self.save_histogram,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> Collection:
        if not isinstance(params, dict):
            raise SMDebugValueError(f"collection params={params!r} must be a dict")
        return cls(
            name=params.get("name"),  # type: ignore[arg-type]  # a dict without a name: as 1.0.34
            include_regex=params.get("include_regex") or [],
            tensor_names=set(params.get("tensor_names") or []),
            reduction_config=ReductionConfig.from_dict(params.get("reduction_config")),
            save_config=SaveConfig.from_dict(params.get("save_config")),
            save_histogram=params.get("save_histogram", True),
        )

    @classmethod
    def from_json(cls, json_str: str) -> Collection:
        return cls.from_dict(json.loads(json_str))

    def __str__(self) -> str:
        return str(self.to_json_dict())

    def __repr__(self) -> str:
        return f"<class Collection: name={self.name}>"

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Collection):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

"""PyTorch's default collections and module-tensor collections."""

from __future__ import annotations

from smdebug.core.collection import Collection as BaseCollection
from smdebug.core.collection import CollectionKeys
from smdebug.core.collection_manager import CollectionManager as BaseCollectionManager

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "DEFAULT_PYTORCH_COLLECTIONS"]

DEFAULT_PYTORCH_COLLECTIONS = {
    CollectionKeys.ALL,
    CollectionKeys.DEFAULT,
    CollectionKeys.WEIGHTS,
    CollectionKeys.BIASES,
    CollectionKeys.GRADIENTS,
    CollectionKeys.LOSSES,
}
# the regexes smdebug 1.0.34 gives them, so that existing analysis code and rules keep working
DEFAULT_REGEXES = {
    CollectionKeys.WEIGHTS: "^(?!gradient).*weight",
    CollectionKeys.BIASES: "^(?!gradient).*bias",
    CollectionKeys.GRADIENTS: "^gradient",
    CollectionKeys.LOSSES: "[Ll]oss_(?!input).*output",
}

# created when asked for (include_collections or get_collection), so that a trial that does not
# use them has the same collections file as one written by 1.0.34
ON_DEMAND_REGEXES = {
    CollectionKeys.INPUTS: "_input_",
    CollectionKeys.OUTPUTS: "_output_",
}


class Collection(BaseCollection):
    """A collection that can also hold a module's inputs and/or outputs."""

    def __init__(self, name, include_regex=None, tensor_names=None, reduction_config=None,
                 save_config=None, save_histogram=True):
        super().__init__(name, include_regex, tensor_names, reduction_config, save_config, save_histogram)
        self._modules: dict = {}

    def add_module_tensors(self, module, inputs=False, outputs=True) -> None:
        self._modules[module] = (inputs, outputs)

    @property
    def modules(self) -> dict:
        return self._modules


class CollectionManager(BaseCollectionManager):
    def __init__(self, create_default=True):
        super().__init__()
        if create_default:
            for name in sorted(DEFAULT_PYTORCH_COLLECTIONS):
                self.create_collection(name)
            for name, regex in DEFAULT_REGEXES.items():
                self.get(name).include(regex)

    def create_collection(self, name, cls=Collection):
        super().create_collection(name, cls=cls)

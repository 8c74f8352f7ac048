"""Tensor adapters: the contract between a framework's tensors and the hook, batched device snapshots, host buffers, reductions."""

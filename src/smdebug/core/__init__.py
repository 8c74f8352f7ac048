"""Framework-agnostic building blocks: modes, configs, collections, key names, the hook core, the writer.

Writing a framework hook (``smdebug.<framework>``) against core alone
------------------------------------------------------------------------
1. Tensors: implement :class:`core.tensors.adapter.TensorAdapter` (the contract: which thread calls
   what, and when). Numpy arrays: use :class:`core.tensors.adapter.NumpyAdapter` as is. Tensors on
   devices: implement the few operations of :class:`core.tensors.tensor_ops.TensorOps` and use
   ``core.tensors.batched_adapter.BatchedAdapter(ops)``: snapshots into reused host buffers, parameter
   copies deferred to a background thread, reductions with the framework's own ops, one host
   transfer per device and dtype per step.
2. Collections, as data: a :class:`core.config.collection_defaults.CollectionDefaults` (collections
   created with their regexes, the ones included by default, on-demand ones, the collections a
   mode never saves). ``CollectionDefaults.manager_class()`` gives the public
   ``smdebug.<framework>.CollectionManager``.
3. ``class Hook(core.engine.hook.BaseHook)`` with class attributes ``collection_defaults`` and
   ``make_adapter``. Its options are :class:`core.config.hook_options.HookOptions` (declared once; do
   not repeat them): a framework with arguments of its own takes them as keyword arguments and
   passes ``*args, **kwargs`` on; extra state goes in an override of ``_configure``.
   ``create_from_json_file`` (SageMaker's JSON) then works unchanged.
4. Workers: override ``_get_worker_name`` (``core.output.locations.worker_name(rank)``, or a device
   name, which ``core.output.locations.serialize_worker`` turns into keys) and ``_get_num_workers``.
   Every key comes from :mod:`core.output.locations`.
5. Callbacks, each decorated with ``core.engine.guard.guarded()`` (an error disables the hook and
   never stops training): at a step boundary, ``stop_requested()`` first (outside the guard;
   when it returns a request, end training the framework's way, e.g. raise
   ``smdebug.exceptions.TrainingStopRequested`` or set the framework's stop flag), then
   ``adapter.sync()`` and ``_begin_step()``; ``set_mode(mode)`` when the mode changes;
   ``saving_this_step()`` to skip work; ``_save_for_tensor(name, value)`` per tensor;
   ``_save_deferred(pairs)`` for values that change only after the step's forward and backward;
   ``_name_modules`` / ``_write_indexed`` for layer inputs and outputs (``_is_tensor`` says what
   a tensor is); ``adapter.sync()`` before anything can change a saved value;
   ``open_writer_gate()`` when training enters a stretch that hardly needs the GIL;
   ``close()`` at the end (it is also registered at exit).
6. The package's ``__init__``: ``get_hook, set_hook, del_hook`` from ``core.engine.active_hook.bind(Hook)``.
A test that drives BaseHook through the protocol alone: tests/core/test_adapter_protocol.py.
"""

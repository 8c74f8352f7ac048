"""The end of the test scripts that train on gloo (imported from beside them, or by path).

Why the scripts end this way (torch 2.13, Python 3.11), from the backtrace of an abort:
each collective that DDP (or FSDP) starts inside backward keeps a copy of the training thread's
state, and that copy holds a Python object (the ``contextvars`` context autograd stashes for
backward). A gloo worker thread frees a finished collective itself, and freeing that object
takes the GIL. When the thread gets there after the interpreter began to finalise (main returned
quickly, the machine is loaded), Python 3.11 ends the thread with pthread_exit, whose unwinding
through a noexcept C++ destructor calls std::terminate: "terminate called without an active
exception", SIGABRT at exit. DDP also keeps the process group and its threads alive after
destroy_process_group, so nothing joins them before the interpreter finalises.

A barrier holds weak references to every collective in flight when it starts; the others are
already freed (a worker frees a collective under the lock the barrier takes). Keeping the
barrier for the life of the process keeps those states alive: no worker frees one late.
"""

import ctypes

import torch.distributed as dist


def end_gloo() -> None:
    """Both ranks finish their collectives, then the process group is destroyed; the barrier is
    never freed (see the module docstring)."""
    work = dist.barrier(async_op=True)
    work.wait()
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(work))
    dist.destroy_process_group()

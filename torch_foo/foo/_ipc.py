"""Sending foo tensors to another process: not supported, refused when pickled.

torch.multiprocessing shares a CUDA tensor with another process through a
CUDA IPC handle to its memory; foo's simulated device lives in one
process, so there is no handle to give. Without this, torch's reducer
would take a foo storage for a CPU one and fail with "_share_fd_: only
available on CPU". The refusal comes from pickling: at the call for a
Process's arguments; for Queue.put, in the queue's feeder thread, where
Python reports any object it cannot pickle.
"""

import multiprocessing.reduction

import torch
import torch.multiprocessing.reductions as reductions

_MESSAGE = (
    "foo tensors cannot be sent to another process: foo has no IPC, so torch.multiprocessing cannot share "
    "their memory as it shares CUDA tensors. Send tensor.cpu() and move it to foo in the receiving process"
)


def _refusing_foo(reduce):
    def reduce_unless_foo(obj):
        device = obj.device if isinstance(obj, torch.Tensor) else getattr(obj, "device", None)
        if device is not None and device.type == "foo":
            raise RuntimeError(_MESSAGE)
        return reduce(obj)

    reduce_unless_foo._foo_wrapped = reduce
    return reduce_unless_foo


def install() -> None:
    """Wraps torch's reducers of tensors and storages in ForkingPickler; idempotent."""
    torch_reducers = {reductions.reduce_tensor, reductions.reduce_storage, reductions.reduce_typed_storage,
                      reductions.reduce_typed_storage_child}
    table = multiprocessing.reduction.ForkingPickler._extra_reducers
    for cls, reduce in list(table.items()):
        if reduce in torch_reducers:
            multiprocessing.reduction.ForkingPickler.register(cls, _refusing_foo(reduce))

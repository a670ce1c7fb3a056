"""Sharing foo tensors with other processes, as torch.multiprocessing shares CUDA tensors.

A foo tensor put on a torch.multiprocessing Queue, passed as a Process
argument or otherwise pickled by multiprocessing's ForkingPickler travels
as a handle to the device allocation that holds its storage (see
docs/guide/ipc.md): the receiving process maps the same memory, so writes on
either side are seen by the other, ordered by streams and events as within
one process. torch's reducers of tensors are wrapped so that strided foo
tensors take this path and everything else keeps torch's; foo storages
themselves are refused, as CUDA storages are ("pickle the tensor instead").
Only spawned (or forkserver) processes can use foo: a child forked after
foo started is refused by foo's lazy initialization, as CUDA's.
"""

import multiprocessing.reduction

import torch
import torch.multiprocessing.reductions as reductions
from torch.nn.parameter import Parameter

from torch_foo import _C
from torch_foo.foo._lazy import _lazy_init


def rebuild_foo_tensor(tensor_cls, tensor_size, tensor_stride, tensor_offset, dtype, storage_device, storage_handle,
                       storage_size_bytes, storage_offset_bytes, requires_grad, ref_counter_handle,
                       ref_counter_offset, event_handle, event_sync_required):
    """The receiving side of reduce_foo_tensor (pickle calls it with what that returned)."""
    if storage_handle is None or storage_size_bytes == 0:
        storage = torch.UntypedStorage(0, device=torch.device("foo", storage_device))
    else:
        # One storage per allocation, offset and size however often it is
        # received, as CUDA's cache keyed by handle: a second receipt gives
        # the producer's new counter back at once.
        key = (storage_handle, storage_offset_bytes, storage_size_bytes)
        storage = reductions.storage_from_cache(torch.UntypedStorage, key)
        if storage is None:
            _lazy_init()
            storage = _C._new_shared_storage(storage_device, storage_handle, storage_size_bytes,
                                             storage_offset_bytes, ref_counter_handle, ref_counter_offset,
                                             event_handle, event_sync_required)
            reductions.shared_cache[key] = reductions.StorageWeakRef(storage)
        else:
            _C._release_ipc_counter(ref_counter_handle, ref_counter_offset)
    typed = torch.storage.TypedStorage(wrap_storage=storage, dtype=dtype, _internal=True)
    t = torch._utils._rebuild_tensor(typed, tensor_offset, tensor_size, tensor_stride)
    if tensor_cls == Parameter:
        return Parameter(t, requires_grad=requires_grad)
    t.requires_grad = requires_grad
    return t


def reduce_foo_tensor(tensor):
    """What pickling a strided foo tensor for another process sends (as torch's reduce_tensor for CUDA)."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")
    torch.utils.hooks.warn_if_has_hooks(tensor)
    (device, handle, storage_size_bytes, storage_offset_bytes, ref_counter_handle, ref_counter_offset,
     event_handle, event_sync_required) = _C._share_storage(tensor.untyped_storage())
    return (rebuild_foo_tensor,
            (type(tensor), tensor.size(), tensor.stride(), tensor.storage_offset(), tensor.dtype, device, handle,
             storage_size_bytes, storage_offset_bytes, tensor.requires_grad, ref_counter_handle,
             ref_counter_offset, event_handle, event_sync_required))


def rebuild_foo_event(device, handle):
    from torch_foo.foo._streams import Event

    return Event.from_ipc_handle(device, handle)


def reduce_foo_event(event):
    """An interprocess torch.foo.Event travels as its handle (as torch.cuda.Event does)."""
    return (rebuild_foo_event, (event.device.index, event.ipc_handle()))


def ipc_collect() -> None:
    """Gives back to the allocator the memory of foo tensors this process sent to others.

    As torch.cuda.ipc_collect: a tensor's block stays allocated after the
    sending process dropped the tensor, for as long as a receiving process
    holds its copy; once every receiver let it go, this (or the next send)
    frees it.
    """
    if torch.foo.is_initialized():
        _C._ipc_collect()


def _is_strided_foo(obj) -> bool:
    return isinstance(obj, torch.Tensor) and obj.device.type == "foo" and obj.layout == torch.strided \
        and not obj.is_nested


def _foo_aware(reduce):
    def reduce_tensor(obj):
        return reduce_foo_tensor(obj) if _is_strided_foo(obj) else reduce(obj)

    reduce_tensor._foo_wrapped = reduce
    return reduce_tensor


def _refusing_foo_storage(reduce):
    def reduce_storage(obj):
        if getattr(obj, "device", None) is not None and obj.device.type == "foo":
            raise RuntimeError("Cannot pickle foo storage; try pickling a foo tensor instead")
        return reduce(obj)

    reduce_storage._foo_wrapped = reduce
    return reduce_storage


def install() -> None:
    """Wraps torch's reducers of tensors and storages in ForkingPickler; idempotent."""
    from torch_foo.foo._streams import Event

    table = multiprocessing.reduction.ForkingPickler._extra_reducers
    for cls, reduce in list(table.items()):
        if reduce is reductions.reduce_tensor:
            multiprocessing.reduction.ForkingPickler.register(cls, _foo_aware(reduce))
        elif reduce is reductions.reduce_storage:
            multiprocessing.reduction.ForkingPickler.register(cls, _refusing_foo_storage(reduce))
    multiprocessing.reduction.ForkingPickler.register(Event, reduce_foo_event)

"""User memory pools: ``torch.foo.MemPool`` and ``torch.foo.use_mem_pool``,
as torch.cuda's.

A pool is a private pool of foo's caching allocator (the kind a graph
capture fills). Inside ``use_mem_pool(pool)``, the calling thread's
allocations on the device come from the pool; blocks freed there stay in
it and serve only its later allocations. Once the MemPool object is gone
and its tensors are freed, its memory goes back to the device.
"""

import contextlib
from collections.abc import Iterator
from typing import Any

from torch_foo import _C
from torch_foo.foo._lazy import _lazy_init
from torch_foo.foo._memory_snapshot import memory_snapshot
from torch_foo.foo._utils import DeviceLike, _get_device_index


class MemPool(_C._MemPool):
    """A memory pool of the caching allocator on the current foo device.

    Args:
        allocator: must be ``None``: foo has no pluggable allocators, so
            the pool's memory always comes from foo's caching allocator.
        use_on_oom: while the pool exists, a request outside it that the
            device cannot serve takes a free block of the pool instead of
            raising ``torch.OutOfMemoryError``.
        no_split: a request takes a whole free block of the pool; blocks are
            never cut, so each segment holds one allocation.
    """

    def __init__(self, allocator: Any = None, use_on_oom: bool = False, no_split: bool = False):
        if allocator is not None:
            raise ValueError(
                "torch.foo.MemPool: allocator must be None; foo has no pluggable allocators, "
                "a pool's memory comes from foo's caching allocator")
        _lazy_init()
        super().__init__(use_on_oom=bool(use_on_oom), no_split=bool(no_split))

    @property
    def id(self) -> tuple[int, int]:
        """The pool's id, ``(0, n)``, as torch.cuda.MemPool's."""
        return super().id

    @property
    def allocator(self) -> None:
        """Always ``None``: the pool uses foo's caching allocator."""
        return None

    def use_count(self) -> int:
        """This object's hold on the pool plus one per ``use_mem_pool`` under way."""
        return super().use_count()

    def snapshot(self, include_traces: bool = True) -> list[dict[str, Any]]:
        """The pool's segments, as ``torch.foo.memory_snapshot(self.id)``."""
        return memory_snapshot(self.id, include_traces=include_traces)


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device: DeviceLike = None) -> Iterator[None]:
    """Routes the calling thread's allocations on ``device`` (default: the
    current foo device) to ``pool`` until the block ends.

    Other threads, the autograd engine's among them, keep allocating from
    the device's own pools, as with torch.cuda.use_mem_pool.
    """
    if not isinstance(pool, MemPool):
        raise TypeError(f"use_mem_pool expects a torch.foo.MemPool, not {type(pool).__name__}")
    _lazy_init()
    index = _get_device_index(device, optional=True)
    _C._begin_allocate_current_thread_to_pool(index, pool.id)
    try:
        yield
    finally:
        _C._end_allocate_to_pool(index, pool.id)
        _C._release_pool(index, pool.id)

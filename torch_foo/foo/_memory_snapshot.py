"""Memory history and snapshots of foo devices, in torch.cuda.memory's format.

A snapshot is the dictionary torch.cuda.memory._snapshot() returns
(``segments`` with their ``blocks``, ``device_traces`` with one list of
trace entries per device), so PyTorch's own tools render it::

    torch.foo.memory._record_memory_history(max_entries=100_000)
    ...  # the code to look at
    torch.foo.memory._dump_snapshot("snap.pickle")
    # python -m torch.cuda._memory_viz trace_plot snap.pickle -o snap.html
"""

import pickle
import sys
from typing import Any, Callable, Literal, Optional

from torch_foo import _C
from torch_foo.foo._lazy import _lazy_init


def _record_memory_history(
    enabled: Optional[Literal["state", "all"]] = "all",
    context: Optional[Literal["state", "alloc", "all"]] = "all",
    stacks: Literal["python", "all"] = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
    clear_history: bool = False,
    skip_actions: Optional[list[str]] = None,
) -> None:
    """Starts (or stops, with ``enabled=None``) recording the allocator's history, as
    torch.cuda.memory._record_memory_history does.

    ``enabled``: ``"state"`` keeps the stack of every live allocation; ``"all"``
    also keeps a trace of every alloc, free and segment action (at most
    ``max_entries`` per device, the newest). ``context`` says which actions get a
    stack (``"state"``: live blocks only; ``"alloc"``: also alloc entries;
    ``"all"``: frees too); ``stacks="all"`` adds C++ frames to the Python ones.
    ``skip_actions`` lists actions not to record (``"free_requested"``, ...).
    Turning recording off, or ``clear_history=True``, drops the trace. ``device``
    is accepted for compatibility: recording covers every foo device, as on CUDA.
    """
    if isinstance(enabled, bool):
        raise TypeError("torch.foo.memory._record_memory_history takes enabled=None, 'state' or 'all' "
                        "(the legacy boolean form is not supported)")
    if max_entries <= 0:
        raise ValueError(f"_record_memory_history: max_entries must be positive, got {max_entries}")
    _C._record_memory_history(enabled, context, stacks, min(max_entries, sys.maxsize), clear_history,
                              list(skip_actions or []))


def _snapshot(device: Any = None, augment_with_fx_traces: bool = False) -> dict[str, Any]:
    """The allocator's state and recorded trace, as torch.cuda.memory._snapshot() returns them.

    ``segments``: every device allocation of every foo device (``device``,
    ``address``, ``total_size``, ``allocated_size``, ``stream``, ``segment_type``, ...)
    with its ``blocks`` in address order (``state`` is ``active_allocated``,
    ``active_pending_free`` for a freed block other streams still use, or
    ``inactive``; ``frames`` is where it was allocated, while recording).
    ``device_traces[d]``: device d's trace entries, oldest first. ``device`` is
    accepted for compatibility: the snapshot covers every foo device, as on CUDA.
    ``augment_with_fx_traces`` adds FX node information to frames of
    torch.compile-generated code, with torch's own helper, as on CUDA.
    """
    _lazy_init()
    snapshot = _C._memory_snapshot()
    if augment_with_fx_traces:
        from torch._utils import _augment_memory_snapshot_stack_traces

        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def memory_snapshot(mempool_id: Optional[tuple[int, int]] = None, include_traces: bool = True) -> list[dict[str, Any]]:
    """Every segment of every device with its blocks, as torch.cuda.memory_snapshot();
    with ``mempool_id``, only the segments of that memory pool (a
    ``MemPool.id`` or a graph's ``pool()``). ``include_traces`` is accepted
    for torch.cuda's signature: the segments carry no trace either way."""
    segments = _snapshot()["segments"]
    if mempool_id is None or tuple(mempool_id) == (0, 0):
        return segments
    return [s for s in segments if tuple(s["segment_pool_id"]) == tuple(mempool_id)]


def _dump_snapshot(filename: str = "dump_snapshot.pickle", augment_with_fx_traces: bool = False) -> None:
    """Pickles _snapshot() into ``filename``, for torch.cuda._memory_viz or pytorch.org/memory_viz."""
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def _attach_out_of_memory_observer(observer: Callable[[int, int, int, int], None]) -> None:
    """Calls ``observer(device, requested_bytes, device_total, device_free)`` whenever a
    foo allocation fails for want of memory, before torch.OutOfMemoryError is raised
    (so it may dump a snapshot). Observers stay attached for the life of the process."""
    _C._attach_out_of_memory_observer(observer)

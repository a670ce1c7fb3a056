"""Memory of foo devices: the caching allocator's statistics and controls.

Named after torch.cuda's memory API; the numbers come from torch_foo's
caching allocator through torch.accelerator.
"""

import os
import warnings
from typing import Any, Optional

import torch

from torch_foo import _C
from torch_foo.foo._lazy import _lazy_init
from torch_foo.foo._mem_pool import MemPool, use_mem_pool  # noqa: F401  (torch.cuda.memory has them too)
from torch_foo.foo._memory_snapshot import (  # noqa: F401  (torch.cuda.memory's history and snapshot API)
    _attach_out_of_memory_observer,
    _dump_snapshot,
    _record_memory_history,
    _snapshot,
    memory_snapshot,
)
from torch_foo.foo._streams import current_stream
from torch_foo.foo._utils import DeviceLike, _get_device_index


def _index(device: DeviceLike) -> int:
    return _get_device_index(device, optional=True)


def memory_stats(device: DeviceLike = None) -> dict[str, Any]:
    """The allocator's statistics for ``device``, flattened as in torch.cuda.memory_stats
    (``"allocated_bytes.all.current"``, ``"num_ooms"``, ...)."""
    return dict(torch.accelerator.memory_stats(_index(device)))


def host_memory_stats() -> dict[str, int]:
    """Statistics of pinned host memory, as torch.cuda.host_memory_stats:
    ``"allocated_bytes.current"`` is what the pinned allocator holds from the
    runtime (in use or cached), ``"active_bytes.current"`` what is in use,
    including blocks waiting for queued copies to finish with them."""
    return dict(_C._host_memory_stats())


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes currently occupied by tensors on ``device``."""
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device: DeviceLike = None) -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes the caching allocator holds on ``device``, in use or cached."""
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device: DeviceLike = None) -> int:
    """Peak of memory_reserved since the start or the last reset_peak_memory_stats."""
    return torch.accelerator.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Resets the peaks of every statistic to their current values."""
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device: DeviceLike = None) -> None:
    """Resets the peaks, as reset_peak_memory_stats (torch.cuda's older name)."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: DeviceLike = None) -> None:
    """Resets the accumulated counts (allocated/freed totals, retries, OOMs)."""
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    """Returns all cached, unused device memory to the device."""
    torch.accelerator.empty_cache()


def set_per_process_memory_fraction(fraction: float, device: DeviceLike = None) -> None:
    """Lets this process reserve at most ``fraction`` (0 to 1) of ``device``'s
    capacity; a request beyond it raises torch.OutOfMemoryError, as
    torch.cuda.set_per_process_memory_fraction."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _C._set_memory_fraction(index, fraction)


def get_per_process_memory_fraction(device: DeviceLike = None) -> float:
    """The fraction set by set_per_process_memory_fraction (1.0 when none was)."""
    _lazy_init()
    return _C._get_memory_fraction(_get_device_index(device, optional=True))


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """(free, total) bytes of ``device`` as the device sees them."""
    _lazy_init()
    return torch.accelerator.get_memory_info(_index(device))


def _format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def memory_summary(device: DeviceLike = None, abbreviated: bool = False) -> str:
    """A readable table of the allocator's statistics for ``device``, like torch.cuda.memory_summary."""
    index = _index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", _format_bytes),
        ("Active memory", "active_bytes", _format_bytes),
        ("Requested memory", "requested_bytes", _format_bytes),
        ("Reserved memory", "reserved_bytes", _format_bytes),
        ("Allocations", "allocation", str),
        ("Active allocs", "active", str),
        ("Segments", "segment", str),
    ]
    pools = ("all",) if abbreviated else ("all", "large_pool", "small_pool")
    width = 78
    lines = ["=" * width, f" foo memory summary, device {index}".ljust(width), "-" * width]
    lines.append(f"{'Metric':<28}{'Cur Usage':>12}{'Peak Usage':>12}{'Tot Alloc':>13}{'Tot Freed':>13}")
    for title, key, fmt in rows:
        lines.append("-" * width)
        for pool in pools:
            name = title if pool == "all" else f"  from {pool.replace('_pool', '')} pool"
            values = [stats.get(f"{key}.{pool}.{field}", 0) for field in ("current", "peak", "allocated", "freed")]
            lines.append(f"{name:<28}" + "".join(f"{fmt(v):>12}" if i < 2 else f"{fmt(v):>13}"
                                                 for i, v in enumerate(values)))
    lines.append("-" * width)
    lines.append(f"{'Allocation retries':<28}{stats.get('num_alloc_retries', 0):>12}")
    lines.append(f"{'Out-of-memory errors':<28}{stats.get('num_ooms', 0):>12}")
    lines.append(f"{'Device allocs / frees':<28}{stats.get('num_device_alloc', 0):>12}"
                 f"{stats.get('num_device_free', 0):>12}")
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


def memory_stats_as_nested_dict(device: DeviceLike = None) -> dict[str, Any]:
    """memory_stats() as nested dictionaries: ``["allocated_bytes"]["all"]["current"]``."""
    nested: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        *parents, leaf = key.split(".")
        level = nested
        for part in parents:
            level = level.setdefault(part, {})
        level[leaf] = value
    return nested


def memory_cached(device: DeviceLike = None) -> int:
    """Deprecated: memory_reserved()'s old name, as in torch.cuda."""
    warnings.warn("torch.foo.memory_cached has been renamed to torch.foo.memory_reserved", FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device: DeviceLike = None) -> int:
    """Deprecated: max_memory_reserved()'s old name, as in torch.cuda."""
    warnings.warn("torch.foo.max_memory_cached has been renamed to torch.foo.max_memory_reserved", FutureWarning,
                  stacklevel=2)
    return max_memory_reserved(device)


def get_allocator_backend() -> str:
    """The allocator in use: ``"native"``, foo's caching allocator (the only one)."""
    return "native"


def reset_peak_host_memory_stats() -> None:
    """Resets the peaks of host_memory_stats() to their current values."""
    _C._reset_peak_host_memory_stats()


def reset_accumulated_host_memory_stats() -> None:
    """Resets host_memory_stats()'s accumulated counts (allocated and freed totals)."""
    _C._reset_accumulated_host_memory_stats()


def caching_allocator_alloc(size: int, device: DeviceLike = None, stream: Optional[torch.Stream] = None) -> int:
    """Takes ``size`` bytes from the caching allocator for work on ``stream``
    (default: the device's current stream) and returns their address, as
    torch.cuda.caching_allocator_alloc; give them back with
    caching_allocator_delete."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    if stream is None:
        stream = current_stream(index)
    if not isinstance(stream, torch.Stream) or stream.device.type != "foo":
        raise TypeError(f"Invalid type for stream argument, must be a foo stream, not {stream!r}")
    if stream.device_index != index:
        raise ValueError(f"stream {stream} is not on the requested device foo:{index}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"Invalid size {size!r}: expected a non-negative int")
    return _C._caching_allocator_alloc(size, stream)


def caching_allocator_delete(mem_ptr: int) -> None:
    """Gives back memory that caching_allocator_alloc returned."""
    _C._caching_allocator_delete(mem_ptr)


def list_gpu_processes(device: DeviceLike = None) -> str:
    """The processes using ``device`` and their memory, in torch.cuda.list_gpu_processes's format.

    A simulated device belongs to the process that simulates it, so the list
    is this process, with the memory its caching allocator holds there (no
    process, as CUDA words it, before the device has held any memory).
    """
    index = _index(device)
    lines = [f"GPU:{index}"]
    reserved = memory_reserved(index)
    if reserved:
        lines.append(f"process {os.getpid():>10d} uses {reserved / (1024 * 1024):>12.3f} MB GPU memory")
    else:
        lines.append("no processes are running")
    return "\n".join(lines)

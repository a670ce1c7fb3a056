"""torch.foo: the foo device module, with torch.cuda's API.

Registered as ``torch.foo``; ``torch.accelerator``, ``torch.Stream`` and
``torch.Event`` reach foo through it and through the C++ device guard.
"""

from typing import Any, Callable

import torch

from torch_foo import _C
from torch_foo.foo._device import (
    device,
    device_count,
    device_of,
    current_device,
    get_device_capability,
    is_bf16_supported,
    can_device_access_peer,
    get_device_name,
    get_device_properties,
    is_available,
    set_device,
    synchronize,
)
from torch_foo.foo._lazy import _is_in_bad_fork, _lazy_init, init, is_initialized
from torch_foo.foo.memory import (
    MemPool,
    use_mem_pool,
    caching_allocator_alloc,
    caching_allocator_delete,
    get_allocator_backend,
    max_memory_cached,
    memory_cached,
    memory_stats_as_nested_dict,
    reset_accumulated_host_memory_stats,
    reset_peak_host_memory_stats,
    empty_cache,
    host_memory_stats,
    max_memory_allocated,
    max_memory_reserved,
    get_per_process_memory_fraction,
    list_gpu_processes,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    memory_snapshot,
    reset_max_memory_allocated,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from torch_foo.foo import amp
from torch_foo.foo._fallback import fallback_ops, synchronizing_ops
from torch_foo.foo.graphs import (
    FooGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)
from torch_foo.foo.amp import get_amp_supported_dtype
from torch_foo.foo.random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from torch_foo.foo._streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    _gate,
    _sleep,
    current_stream,
    default_stream,
    set_stream,
    stream,
)
from torch_foo.foo.race import (
    RaceError,
    clear_race_reports,
    race_check,
    race_check_mode,
    race_reports,
    set_race_check,
)
from torch_foo.foo._ipc import ipc_collect
from torch_foo.foo import _utils  # noqa: F401  (torch.serialization looks up torch.foo._utils)

# torch.cuda.OutOfMemoryError is torch.OutOfMemoryError; foo's allocator raises it.
OutOfMemoryError = torch.OutOfMemoryError

# Attributes that other parts of torch_foo provide on first access, by name:
# inductor reads its codegen classes from torch.foo at its first
# compilation, and torch_foo.compile registers them here so that importing
# inductor waits until then (and this module imports nothing of compile).
_lazy_attributes: dict[str, Callable[[], Any]] = {}


def _register_lazy_attribute(name: str, provider: Callable[[], Any]) -> None:
    """Makes ``torch.foo.<name>`` return ``provider()`` (called at each access)."""
    _lazy_attributes[name] = provider

__all__ = [
    "Event",
    "ipc_collect",
    "ExternalStream",
    "FooGraph",
    "RaceError",
    "clear_race_reports",
    "race_check",
    "race_check_mode",
    "race_reports",
    "set_race_check",
    "Stream",
    "StreamContext",
    "current_device",
    "empty_cache",
    "fallback_ops",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "make_graphed_callables",
    "host_memory_stats",
    "MemPool",
    "use_mem_pool",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "get_allocator_backend",
    "max_memory_cached",
    "memory_cached",
    "memory_stats_as_nested_dict",
    "reset_accumulated_host_memory_stats",
    "reset_peak_host_memory_stats",
    "synchronizing_ops",
    "max_memory_allocated",
    "max_memory_reserved",
    "get_per_process_memory_fraction",
    "list_gpu_processes",
    "mem_get_info",
    "default_generators",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_per_process_memory_fraction",
    "OutOfMemoryError",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "amp",
    "get_amp_supported_dtype",
    "get_device_capability",
    "is_bf16_supported",
    "can_device_access_peer",
    "memory_snapshot",
    "reset_max_memory_allocated",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
    "get_device_name",
    "get_device_properties",
    "init",
    "is_available",
    "is_initialized",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]


def __getattr__(name: str):  # noqa: ANN202
    if name == "_initialized":
        # torch.cuda's flag, which torch.utils.checkpoint reads (getattr
        # with a default) to decide whether to save and restore the device's
        # RNG state around a recomputation.
        return is_initialized()
    if name == "default_generators":
        # As torch.cuda.default_generators: each device's default generator,
        # by index (foo's exist without an initialized runtime).
        return tuple(_C._default_generator(i) for i in range(_C._device_count()))
    provider = _lazy_attributes.get(name)
    if provider is not None:
        return provider()
    raise AttributeError(f"module 'torch.foo' has no attribute '{name}'")

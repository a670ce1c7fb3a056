"""torch_foo._C of the Limited API build (docs/limited-api.md).

The same names as the pybind11 extension of the default build, over the
dispatcher operators ``torch.ops._foo_C`` and the abi3 extension
``torch_foo._C_limited``, which registers them when it loads. Installed as
``torch_foo/_C.py`` only by a build with ``TORCH_FOO_LIMITED_API=ON``.
"""

import json

import torch

from torch_foo import _C_limited

__file__ = _C_limited.__file__  # what inductor's cache keys hash: the compiled half

_ops = torch.ops._foo_C

# Devices.
_device_count = _ops.device_count
_no_device_reason = _ops.no_device_reason
_get_device = _ops.get_device
_set_device = _ops.set_device
_exchange_device = _ops.exchange_device
_init = _ops.init
_is_initialized = _ops.is_initialized
_is_in_bad_fork = _ops.is_in_bad_fork
_stream_priority_range = _ops.stream_priority_range


_synchronize = _C_limited._synchronize


class _FooDeviceProperties:
    """A foo device's properties, as torch.cuda's."""

    def __init__(self, device: int) -> None:
        self.name, self.total_memory, self.major, self.minor, self.executor_count = _ops.device_properties(device)

    @property
    def multi_processor_count(self) -> int:
        """The CUDA name for the units that run work in parallel."""
        return self.executor_count

    def __repr__(self) -> str:
        return (f"_FooDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory >> 20}MB, executor_count={self.executor_count})")


_get_device_properties = _FooDeviceProperties

# Streams and events.
_current_stream = _ops.current_stream
_default_stream = _ops.default_stream
_set_stream = _ops.set_stream
_stream_from_external = _ops.stream_from_external
_stream_native_handle = _ops.stream_native_handle
_stream_priority = _ops.stream_priority
_sleep = _ops.sleep
_raw_stream_create = _ops.raw_stream_create
_raw_stream_destroy = _ops.raw_stream_destroy


def _event_elapsed_time(start: torch.Event, end: torch.Event) -> float:
    if not (isinstance(start, torch.Event) and isinstance(end, torch.Event)):
        raise RuntimeError(f"elapsed_time expects torch.Event objects, got {type(end)}")
    return _ops.event_elapsed_time(start.event_id, end.event_id)


# Graphs.
_is_current_stream_capturing = _ops.is_current_stream_capturing


def _graph_pool_handle() -> tuple[int, int]:
    return tuple(_ops.graph_pool_handle())


def _graph_pool_use_count(device: int, pool: tuple[int, int]) -> int:
    return _ops.graph_pool_use_count(device, *pool)


# Tensors, generators, the fallback's logs.
_fallback_ops = _ops.fallback_ops
_synchronizing_ops = _ops.synchronizing_ops
_host_memory_stats = _ops.host_memory_stats
_philox4x32_10 = _ops.philox4x32_10
_set_backend_flag = _ops.set_backend_flag
_backend_flags = _ops.backend_flags
_default_generator = _ops.default_generator

# torch.compile.
_name_compiled_kernel = _ops.name_compiled_kernel
_MEMORY_FORMATS = (torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d)


def _launch_compiled_kernel(fn: int, device: int, args: tuple) -> None:
    _ops.launch_compiled_kernel(fn, device, list(args))


def _convolution_memory_format(input: torch.Tensor, weight: torch.Tensor) -> torch.memory_format:
    return _MEMORY_FORMATS[_ops.convolution_memory_format(input, weight)]


# Memory.
_set_memory_fraction = _ops.set_memory_fraction
_get_memory_fraction = _ops.get_memory_fraction
_caching_allocator_alloc = _ops.caching_allocator_alloc
_caching_allocator_delete = _ops.caching_allocator_delete
_reset_peak_host_memory_stats = _ops.reset_peak_host_memory_stats
_reset_accumulated_host_memory_stats = _ops.reset_accumulated_host_memory_stats
_record_memory_history = _ops.record_memory_history
_attach_out_of_memory_observer = _C_limited._attach_out_of_memory_observer


def _memory_snapshot() -> dict:
    snapshot = json.loads(_ops.memory_snapshot())
    for segment in snapshot["segments"]:
        segment["segment_pool_id"] = tuple(segment["segment_pool_id"])
    for trace in snapshot["device_traces"]:
        for entry in trace:
            entry["pool_id"] = tuple(entry["pool_id"])
    return snapshot


class _MemPool:
    """torch.foo.MemPool's C++ half: a pool held through a handle."""

    def __init__(self, use_on_oom: bool, no_split: bool) -> None:
        self._handle = _ops.mem_pool_create(use_on_oom, no_split)
        id0, id1, self._device = _ops.mem_pool_info(self._handle)
        self._id = (id0, id1)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            _ops.mem_pool_release(handle)

    @property
    def id(self) -> tuple[int, int]:
        return self._id

    @property
    def device(self) -> int:
        return self._device

    def use_count(self) -> int:
        return _ops.mem_pool_use_count(self._handle)


def _begin_allocate_current_thread_to_pool(device: int, pool: tuple[int, int]) -> None:
    _ops.begin_allocate_current_thread_to_pool(device, *pool)


def _end_allocate_to_pool(device: int, pool: tuple[int, int]) -> None:
    _ops.end_allocate_to_pool(device, *pool)


def _release_pool(device: int, pool: tuple[int, int]) -> None:
    _ops.release_pool(device, *pool)


# The race detector. Its errors in raise mode stay RuntimeErrors: raising
# torch_foo.RaceError from inside an operator takes torch_python's
# python_error.
_race_set_mode = _ops.race_set_mode
_race_get_mode = _ops.race_get_mode
_race_clear_reports = _ops.race_clear_reports


def _race_set_error_type(error_type: type) -> None:
    pass


def _race_reports() -> list[dict]:
    return json.loads(_ops.race_reports())


# fooccl: its backend class derives from c10d's pybind11 classes, which
# only an extension built on torch_python can do.
class _Distributed:
    @staticmethod
    def FooBackend(*args, **kwargs):  # noqa: N802  (the class name of the default build)
        raise RuntimeError("fooccl is not available in torch_foo's Limited API build: its c10d backend "
                           "class needs torch_python (build without TORCH_FOO_LIMITED_API)")

    @staticmethod
    def _set_split_creator(create) -> None:
        pass


def _init_distributed() -> None:
    global _distributed
    _distributed = _Distributed()

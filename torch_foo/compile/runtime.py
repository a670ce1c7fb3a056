"""What the wrapper code inductor generates for foo calls at run time.

Kept free of inductor imports: compiled modules loaded from the cache import
only this.
"""

import ctypes
from typing import Any

import torch

from torch_foo import _C

_devices: dict[int, torch.device] = {}


class CompiledKernel(_C._CompiledKernel):
    """A compiled kernel as the generated module holds it, released with that module.

    ``entry`` is its packed entry point (a ctypes function of the loaded
    library), ``name`` what errors and the profiler call it, ``writes`` which
    arguments it writes (by position), told to the race detector at each
    launch as an operator's schema tells it.
    """

    def __init__(self, entry: Any, name: str, writes: list[bool]) -> None:
        address = ctypes.cast(entry, ctypes.c_void_p).value
        if not address:
            raise RuntimeError(f"torch.compile on foo: kernel {name} ({entry!r}) has no address")
        super().__init__(address, name, writes)
        self.entry = entry  # the address stays valid while the kernel is held


def launch(kernel: CompiledKernel, device_index: int, args: tuple) -> None:
    """Queues ``kernel(*args)`` on the current stream of foo device ``device_index``.

    Tensors are passed as their data pointers and scalars by value, both
    taken now; the kernel runs after the work already queued on the stream,
    and this returns as soon as it is queued.
    """
    _C._launch_compiled_kernel(kernel, device_index, args)


def live_kernels() -> int:
    """How many compiled kernels this process holds (for tests: they go with their modules)."""
    return _C._live_compiled_kernels()


def empty_strided_foo(size: tuple, stride: tuple, dtype: torch.dtype, device_index: int) -> torch.Tensor:
    """An uninitialized buffer from foo's caching allocator on ``foo:device_index``."""
    device = _devices.get(device_index)
    if device is None:
        device = _devices[device_index] = torch.device("foo", device_index)
    return torch.empty_strided(size, stride, dtype=dtype, device=device)


def get_raw_stream(device_index: int) -> int:
    """The address of the current ``fooStream_t`` of ``foo:device_index``."""
    return torch.foo.current_stream(device_index).foo_stream

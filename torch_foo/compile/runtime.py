"""What the wrapper code inductor generates for foo calls at run time.

Kept free of inductor imports: compiled modules loaded from the cache import
only this.
"""

import ctypes
from typing import Any

import torch

from torch_foo import _C

# id(kernel) -> (kernel, address); holding the kernel keeps its id unique.
_addresses: dict[int, tuple[Any, int]] = {}
_devices: dict[int, torch.device] = {}


def _address(kernel: Any) -> int:
    """The address of a compiled kernel's packed entry point (a ctypes function)."""
    entry = _addresses.get(id(kernel))
    if entry is None:
        address = ctypes.cast(kernel, ctypes.c_void_p).value
        if not address:
            raise RuntimeError(f"torch.compile on foo: kernel {kernel!r} has no address")
        entry = _addresses[id(kernel)] = (kernel, address)
    return entry[1]


def name_kernel(kernel: Any, name: str) -> Any:
    """Names a compiled kernel for the errors its launches report; returns it."""
    _C._name_compiled_kernel(_address(kernel), name)
    return kernel


def launch(kernel: Any, device_index: int, args: tuple) -> None:
    """Queues ``kernel(*args)`` on the current stream of foo device ``device_index``.

    Tensors are passed as their data pointers and scalars by value, both
    taken now; the kernel runs after the work already queued on the stream,
    and this returns as soon as it is queued.
    """
    _C._launch_compiled_kernel(_address(kernel), device_index, args)


def empty_strided_foo(size: tuple, stride: tuple, dtype: torch.dtype, device_index: int) -> torch.Tensor:
    """An uninitialized buffer from foo's caching allocator on ``foo:device_index``."""
    device = _devices.get(device_index)
    if device is None:
        device = _devices[device_index] = torch.device("foo", device_index)
    return torch.empty_strided(size, stride, dtype=dtype, device=device)


def get_raw_stream(device_index: int) -> int:
    """The address of the current ``fooStream_t`` of ``foo:device_index``."""
    return torch.foo.current_stream(device_index).foo_stream

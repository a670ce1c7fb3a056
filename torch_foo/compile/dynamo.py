"""Dynamo's device interface for foo (``torch._dynamo.device_interface``)."""

from typing import Any

import torch
from torch._dynamo.device_interface import (
    DeviceInterface,
    caching_worker_current_devices,
    caching_worker_device_properties,
    register_interface_for_device,
)

import torch_foo.foo as foo
from torch_foo import _C
from torch_foo.foo._lazy import _lazy_init


def _index(device: Any) -> int:
    """A foo device index from an int, a string, a torch.device or None (current)."""
    if device is None:
        return foo.current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "foo":
            raise ValueError(f"expected a foo device, got {device}")
        return device.index if device.index is not None else foo.current_device()
    return int(device)


class FooInterface(DeviceInterface):
    """What dynamo and inductor need to know about, and do with, foo devices."""

    device = foo.device  # type: ignore[assignment]
    Event = foo.Event  # type: ignore[assignment]
    Stream = foo.Stream  # type: ignore[assignment]

    class Worker:
        """Device queries that compile workers may run without touching the device."""

        @staticmethod
        def set_device(device: int) -> None:
            caching_worker_current_devices["foo"] = device

        @staticmethod
        def current_device() -> int:
            if "foo" in caching_worker_current_devices:
                return caching_worker_current_devices["foo"]
            return foo.current_device()

        @staticmethod
        def get_device_properties(device: torch.types.Device = None) -> Any:
            index = FooInterface.Worker.current_device() if device is None else _index(device)
            if "foo" not in caching_worker_device_properties:
                caching_worker_device_properties["foo"] = [
                    foo.get_device_properties(i) for i in range(foo.device_count())
                ]
            return caching_worker_device_properties["foo"][index]

    current_device = staticmethod(foo.current_device)
    set_device = staticmethod(foo.set_device)
    device_count = staticmethod(foo.device_count)
    is_available = staticmethod(foo.is_available)
    stream = staticmethod(foo.stream)  # type: ignore[assignment]
    current_stream = staticmethod(foo.current_stream)
    set_stream = staticmethod(foo.set_stream)  # type: ignore[assignment]
    synchronize = staticmethod(foo.synchronize)
    memory_allocated = staticmethod(foo.memory_allocated)

    @staticmethod
    def exchange_device(device: int) -> int:
        _lazy_init()
        return _C._exchange_device(device)

    # foo is initialized by then, so there is nothing for "maybe" to skip.
    maybe_exchange_device = exchange_device

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        foo.set_stream(foo.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        """The address of the current ``fooStream_t`` of device ``device_idx``."""
        return foo.current_stream(device_idx).foo_stream

    @classmethod
    def get_device_properties(cls, device: torch.types.Device = None) -> Any:
        return foo.get_device_properties(device)

    @staticmethod
    def get_compute_capability(device: torch.types.Device = None) -> int:
        major, minor = foo.get_device_capability(device)
        return major * 10 + minor

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True  # foo kernels are ATen's CPU kernels, which support bfloat16

    @classmethod
    def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
        # The device's own answer (every dtype but the quantized ones, for
        # which foo has no kernels).
        return dtype in torch.accelerator.get_device_capability("foo")["supported_dtypes"]

    @staticmethod
    def is_triton_capable(device: torch.types.Device = None) -> bool:
        return False  # inductor generates C++ for foo, never Triton

    @staticmethod
    def raise_if_triton_unavailable(device: torch.types.Device = None) -> None:
        raise RuntimeError("foo devices do not run Triton kernels; inductor generates C++ kernels for foo")


def register() -> None:
    """Registers FooInterface for ``foo`` and each ``foo:N``."""
    register_interface_for_device("foo", FooInterface)
    for i in range(foo.device_count()):
        register_interface_for_device(f"foo:{i}", FooInterface)

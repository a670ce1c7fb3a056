"""Devices: count, current device, properties, synchronization."""

from typing import Any

import torch

from torch_foo import _C
from torch_foo.foo._lazy import _lazy_init
from torch_foo.foo._utils import DeviceLike, _get_device_index


def is_available() -> bool:
    """Whether a foo device can be used. Never initializes foo (fork-safe)."""
    return _C._device_count() > 0


def device_count() -> int:
    """The number of foo devices (``FOO_SIM_DEVICE_COUNT``). Never initializes foo."""
    return _C._device_count()


def current_device() -> int:
    """The index of the calling thread's current foo device."""
    _lazy_init()
    return _C._get_device()


def set_device(device: DeviceLike) -> None:
    """Sets the calling thread's current foo device; a negative index does nothing."""
    index = _get_device_index(device)
    if index >= 0:
        _lazy_init()
        _C._set_device(index)


class device:
    """Context manager that makes ``device`` current and restores the previous one.

    ``None`` or a negative index leaves the current device alone.
    """

    def __init__(self, device: Any) -> None:
        self.idx = _get_device_index(device, optional=True) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx >= 0:
            _lazy_init()
            self.prev_idx = _C._exchange_device(self.idx)

    def __exit__(self, *args: object) -> None:
        if self.idx >= 0:
            self.idx = _C._exchange_device(self.prev_idx)


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current, if it is on foo."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == "foo" else None)


def synchronize(device: DeviceLike = None) -> None:
    """Waits for all work queued on every stream of ``device`` (default: current).

    A negative index means the current device, as in torch.cuda.synchronize
    (whose device context leaves the current device alone for one).
    """
    _lazy_init()
    index = _get_device_index(device, optional=True)
    _C._synchronize(index if index >= 0 else _C._get_device())


def get_device_properties(device: DeviceLike = None) -> Any:
    """Name, total memory, capability and executor count of a foo device."""
    return _C._get_device_properties(_get_device_index(device, optional=True))


def get_device_name(device: DeviceLike = None) -> str:
    """The name of a foo device."""
    return get_device_properties(device).name


def get_device_capability(device: DeviceLike = None) -> tuple[int, int]:
    """The (major, minor) capability of a foo device."""
    props = get_device_properties(device)
    return props.major, props.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether foo computes in bfloat16: always (its kernels are CPU's, which do)."""
    return is_available()


def can_device_access_peer(device: DeviceLike, peer_device: DeviceLike) -> bool:
    """Whether ``device`` can copy to and from ``peer_device`` directly: any two
    foo devices can (peer copies, ``Memcpy PtoP``); a device is not its own peer."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    peer = _get_device_index(peer_device, optional=True)
    count = device_count()
    if not 0 <= index < count:
        raise AssertionError("Invalid device id")
    if not 0 <= peer < count:
        raise AssertionError("Invalid peer device id")
    return index != peer

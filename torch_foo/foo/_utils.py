"""Device argument parsing for torch.foo (also used by torch.serialization)."""

from typing import Any, Optional, Union

import torch

from torch_foo import _C

DeviceLike = Optional[Union[int, str, torch.device]]


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """Returns the foo device index that ``device`` names.

    ``device`` may be an int, a string such as ``"foo:1"``, or a
    ``torch.device``. ``None`` (and ``"foo"`` without an index) means the
    current device when ``optional`` is true; a CPU device gives -1 when
    ``allow_cpu`` is true. Anything else raises ValueError.
    """
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu and device.type == "cpu":
            return -1
        if device.type != "foo":
            raise ValueError(f"Expected a foo device, but got: {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError("Expected a foo device with a specified index or an integer, but got: None")
        return _C._get_device()
    if isinstance(device, bool) or not isinstance(device, int):
        raise ValueError(f"Expected a foo device index (int), a device string or a torch.device, but got: {device!r}")
    return device

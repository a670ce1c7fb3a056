"""Backend metadata of foo tensors, kept through torch.save / torch.load.

A foo tensor can carry named boolean flags: per-tensor backend state of the
kind a vendor keeps (say, that a tensor is stored in an internal layout).
torch.save writes them with the tensor and torch.load restores them on foo.
"""

import torch

from torch_foo import _C


def set_backend_flag(tensor: torch.Tensor, name: str, value: bool = True) -> None:
    """Sets the backend flag ``name`` of a foo tensor."""
    _C._set_backend_flag(tensor, name, bool(value))


def backend_flags(tensor: torch.Tensor) -> dict[str, bool]:
    """The backend flags of a foo tensor (empty if none were set)."""
    return dict(_C._backend_flags(tensor))

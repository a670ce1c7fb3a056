"""Automatic mixed precision on foo, like torch.cuda.amp.

``torch.autocast("foo", dtype=...)`` casts operators as CUDA's autocast does
(lower precision for matmuls and convolutions, float32 for reductions,
normalizations and losses); ``torch.amp.GradScaler("foo")`` scales losses
with foo kernels.
"""

from typing import Any, Callable, Optional

import torch


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes foo's autocast supports: float16 and bfloat16."""
    return [torch.float16, torch.bfloat16]


class autocast(torch.amp.autocast):
    """``torch.foo.amp.autocast(args...)`` is ``torch.autocast("foo", args...)``."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True) -> None:
        super().__init__("foo", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.foo.amp.GradScaler(args...)`` is ``torch.amp.GradScaler("foo", args...)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("foo", *args, **kwargs)


def custom_fwd(fwd: Optional[Callable] = None, *, cast_inputs: Optional[torch.dtype] = None) -> Any:
    """``torch.amp.custom_fwd`` for foo: decorates a custom autograd Function's forward."""
    return torch.amp.custom_fwd(fwd, device_type="foo", cast_inputs=cast_inputs)


def custom_bwd(bwd: Optional[Callable] = None) -> Any:
    """``torch.amp.custom_bwd`` for foo: runs backward with forward's autocast state."""
    return torch.amp.custom_bwd(bwd, device_type="foo")


__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_amp_supported_dtype"]

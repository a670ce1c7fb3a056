"""Automatic mixed precision on foo, like torch.cuda.amp.

``torch.autocast("foo", dtype=...)`` casts operators as CUDA's autocast does
(lower precision for matmuls and convolutions, float32 for reductions,
normalizations and losses); ``torch.amp.GradScaler("foo")`` scales losses
with foo kernels.
"""

from typing import Any

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


__all__ = ["GradScaler", "autocast", "get_amp_supported_dtype"]

"""The foo custom operators (namespace ``torch.ops.foo``), with Python wrappers.

They work on CPU and foo tensors, under autograd (their backward is C++),
under torch.no_grad, and with fake tensors (they have Meta kernels).
"""

import torch

import torch_foo  # noqa: F401  (loads the extension that defines the operators)


def mymuladd(a: torch.Tensor, b: torch.Tensor, c: float) -> torch.Tensor:
    """Returns ``a * b + c``. ``a`` and ``b`` must have the same shape, dtype and device."""
    return torch.ops.foo.mymuladd.default(a, b, float(c))


def scaled_silu(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Returns ``scale * x * sigmoid(x)``, a fused activation with its own backward
    (``torch.ops.foo.scaled_silu_backward``), twice differentiable."""
    return torch.ops.foo.scaled_silu.default(x, float(scale))


__all__ = ["mymuladd", "scaled_silu"]

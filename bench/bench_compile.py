"""torch.compile (inductor) on foo: compiled training steps against the same
compiled model on CPU, and fusion against eager foo."""

import torch

from common import ratio, row, synced
from bench_training import Classifier, compare, mlp


def mlp_step() -> dict:
    return compare("compiled MLP training step (SGD, batch 64)", mlp(), lambda p: torch.optim.SGD(p, lr=0.01),
                   torch.randn(64, 512), torch.randint(0, 10, (64,)), "<= 1.1x", wrap=torch.compile)


def transformer_step() -> dict:
    return compare("compiled transformer encoder training step (AdamW foreach, batch 8x64)", Classifier(),
                   lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
                   torch.randn(8, 64, 128), torch.randint(0, 10, (8,)), "<= 1.1x", wrap=torch.compile)


def _chain(x: torch.Tensor) -> torch.Tensor:
    # Cheap operators: eager time is memory traffic, which fusion removes.
    ops = (lambda t: t * 1.01, lambda t: t + 0.1, torch.relu, lambda t: t - 0.05, torch.abs)
    for i in range(50):  # 50 pointwise operators, one per iteration
        x = ops[i % len(ops)](x)
    return x


def pointwise_fusion() -> dict:
    x = torch.randn(1 << 20, device="foo")
    compiled = torch.compile(_chain)
    compiled_fn = synced(lambda: compiled(x))
    eager_fn = synced(lambda: _chain(x))
    # Columns: compiled foo, then eager foo (not CPU) for this row.
    return row("chain of 50 pointwise ops on 1M floats: compiled foo vs eager foo (CPU column = eager foo)",
               *ratio(compiled_fn, eager_fn, repeat=5), "<= 0.33x (>= 3x faster)")


def run() -> list[dict]:
    return [mlp_step(), transformer_step(), pointwise_fusion()]

"""torch.compile (inductor) on foo: compiled training steps against the same
compiled model on CPU, and fusion against eager foo."""

import torch

import bench_training
from bench_training import compare
from common import ratio, row, synced


def mlp_step_work(device: str):
    return bench_training.mlp_step_work(device, wrap=torch.compile)


def transformer_step_work(device: str):
    return bench_training.transformer_step_work(device, wrap=torch.compile)


def mlp_step() -> dict:
    return compare("compiled MLP training step (SGD, batch 64)", "bench_compile", "mlp_step_work", "<= 1.1x")


def transformer_step() -> dict:
    return compare("compiled transformer encoder training step (AdamW foreach, batch 8x64)", "bench_compile",
                   "transformer_step_work", "<= 1.1x")


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

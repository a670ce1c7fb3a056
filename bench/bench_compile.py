"""torch.compile (inductor) on foo: compiled training steps against the same
compiled model on CPU, and fusion against eager foo."""

import copy

import torch

from common import ratio, row, synced
from bench_training import _Classifier


def _step(model, opt, x, y):
    def run() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return run


def _compare(name: str, model: torch.nn.Module, make_opt, x: torch.Tensor, y: torch.Tensor) -> dict:
    foo_model = copy.deepcopy(model).foo()
    cpu_step = _step(torch.compile(model), make_opt(model.parameters()), x, y)
    foo_step = _step(torch.compile(foo_model), make_opt(foo_model.parameters()), x.foo(), y.foo())
    return row(name, *ratio(synced(foo_step), cpu_step, repeat=5), "<= 1.1x")


def mlp_step() -> dict:
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    return _compare("compiled MLP training step (SGD, batch 64)", model, lambda p: torch.optim.SGD(p, lr=0.01),
                    torch.randn(64, 512), torch.randint(0, 10, (64,)))


def transformer_step() -> dict:
    return _compare("compiled transformer encoder training step (AdamW foreach, batch 8x64)", _Classifier(),
                    lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
                    torch.randn(8, 64, 128), torch.randint(0, 10, (8,)))


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

"""One training step (forward, backward, optimizer) on foo against CPU."""

import importlib

import torch

from common import ratio, row, synced
from cpu_side import cpu_workload


def _step(model, opt, x, y):
    def run() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return run


def training_step(device: str, model: torch.nn.Module, make_opt, x: torch.Tensor, y: torch.Tensor,
                  wrap=lambda m: m):
    """One training step of `wrap(model)` on `device`, as a function to time."""
    model = model.to(device)
    return _step(wrap(model), make_opt(model.parameters()), x.to(device), y.to(device))


def compare(name: str, module: str, factory: str, target: str) -> dict:
    """The training step `module.factory(device)` on foo against the same
    on CPU, in the CPU process."""
    foo_step = getattr(importlib.import_module(module), factory)("foo")
    return row(name, *ratio(synced(foo_step), cpu_workload(module, factory), repeat=5), target)


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                               torch.nn.ReLU(), torch.nn.Linear(1024, 10))


def mlp_step_work(device: str, wrap=lambda m: m):
    torch.manual_seed(0)
    return training_step(device, mlp(), lambda p: torch.optim.SGD(p, lr=0.01), torch.randn(64, 512),
                         torch.randint(0, 10, (64,)), wrap)


def mlp_step() -> dict:
    return compare("MLP training step (SGD, batch 64)", "bench_training", "mlp_step_work", "<= 1.2x")


class Classifier(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def transformer_step_work(device: str, wrap=lambda m: m):
    torch.manual_seed(0)
    return training_step(device, Classifier(), lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
                         torch.randn(8, 64, 128), torch.randint(0, 10, (8,)), wrap)


def transformer_step() -> dict:
    return compare("transformer encoder training step (AdamW foreach, batch 8x64)", "bench_training",
                   "transformer_step_work", "<= 1.2x")


def run() -> list[dict]:
    return [mlp_step(), transformer_step()]

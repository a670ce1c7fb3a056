"""One training step (forward, backward, optimizer) on foo against CPU."""

import copy

import torch

from common import ratio, row, synced


def _step(model, opt, x, y):
    def run() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return run


def compare(name: str, model: torch.nn.Module, make_opt, x: torch.Tensor, y: torch.Tensor, target: str,
            wrap=lambda m: m) -> dict:
    """A training step of `wrap(model)` on foo against the same on CPU."""
    foo_model = copy.deepcopy(model).foo()
    cpu_step = _step(wrap(model), make_opt(model.parameters()), x, y)
    foo_step = _step(wrap(foo_model), make_opt(foo_model.parameters()), x.foo(), y.foo())
    return row(name, *ratio(synced(foo_step), cpu_step, repeat=5), target)


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                               torch.nn.ReLU(), torch.nn.Linear(1024, 10))


def mlp_step() -> dict:
    return compare("MLP training step (SGD, batch 64)", mlp(), lambda p: torch.optim.SGD(p, lr=0.01),
                   torch.randn(64, 512), torch.randint(0, 10, (64,)), "<= 1.2x")


class Classifier(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def transformer_step() -> dict:
    return compare("transformer encoder training step (AdamW foreach, batch 8x64)", Classifier(),
                   lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
                   torch.randn(8, 64, 128), torch.randint(0, 10, (8,)), "<= 1.2x")


def run() -> list[dict]:
    return [mlp_step(), transformer_step()]

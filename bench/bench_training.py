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


def _compare(name: str, model: torch.nn.Module, make_opt, x: torch.Tensor, y: torch.Tensor) -> dict:
    foo_model = copy.deepcopy(model).foo()
    cpu_step = _step(model, make_opt(model.parameters()), x, y)
    foo_step = _step(foo_model, make_opt(foo_model.parameters()), x.foo(), y.foo())
    return row(name, *ratio(synced(foo_step), cpu_step, repeat=5), "<= 1.2x")


def mlp_step() -> dict:
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    return _compare("MLP training step (SGD, batch 64)", model, lambda p: torch.optim.SGD(p, lr=0.01),
                    torch.randn(64, 512), torch.randint(0, 10, (64,)))


class _Classifier(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def transformer_step() -> dict:
    return _compare("transformer encoder training step (AdamW foreach, batch 8x64)", _Classifier(),
                    lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
                    torch.randn(8, 64, 128), torch.randint(0, 10, (8,)))


def run() -> list[dict]:
    return [mlp_step(), transformer_step()]

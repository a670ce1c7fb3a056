"""tinytrain's tests: they run on whatever accelerator torch reports (foo under torch_foo, CUDA on a GPU
machine) or on the CPU."""

import copy

import pytest
import torch

from tinytrain import Prefetcher, Trainer, default_device


def _data(batches: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.randn(16, 4, generator=generator)
    out = []
    for _ in range(batches):
        x = torch.randn(32, 16, generator=generator)
        out.append((x, (x @ weights).argmax(dim=1)))
    return out


def _model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


@pytest.fixture
def device():
    return default_device()


@pytest.fixture
def accelerator(device):
    if device.type == "cpu":
        pytest.skip("needs an accelerator")
    return device


def test_training_reduces_the_loss(device):
    model = _model()
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.5), device)
    history = trainer.fit(_data(8), epochs=5)
    assert history[-1] < 0.7 * history[0]


def test_a_step_on_the_device_matches_the_cpu(device):
    model = _model()
    reference = copy.deepcopy(model)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), device)
    cpu = Trainer(reference, torch.optim.SGD(reference.parameters(), lr=0.1), torch.device("cpu"))
    x, y = _data(1)[0]
    loss = trainer.train_step(x.to(device), y.to(device))
    torch.testing.assert_close(loss.cpu(), cpu.train_step(x, y))
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach())


def test_the_prefetcher_hands_over_every_batch_in_order(device):
    data = _data(6)
    delivered = [(x.cpu(), y.cpu()) for x, y in Prefetcher(data, device)]
    assert len(delivered) == len(data)
    for (x, y), (want_x, want_y) in zip(delivered, data):
        assert torch.equal(x, want_x) and torch.equal(y, want_y)


def test_evaluation_counts_predictions_per_class(device):
    model = _model()
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.5), device)
    trainer.fit(_data(8), epochs=3)
    result = trainer.evaluate(_data(4, seed=1), num_classes=4)
    assert sum(result["predicted"]) == 4 * 32
    assert 0.0 <= result["accuracy"] <= 1.0


def test_scoring_on_a_side_stream(accelerator):
    model = _model().to(accelerator)
    inputs = torch.randn(256, 16, device=accelerator)
    inputs.mul_(2.0)  # written on the current stream
    side = torch.Stream(device=accelerator)
    # The demo's deliberate bug: the side stream never waits for the current
    # one (side.wait_stream(torch.accelerator.current_stream())), so the model
    # may read `inputs` before mul_ has written it. On a GPU this fails now
    # and then; `pytest --foo --foo-strict` fails it every time, naming both lines.
    with side:
        scores = model(inputs)
    torch.accelerator.current_stream(accelerator).wait_stream(side)
    assert scores.shape == (256, 4)

"""Moving a module to foo keeps its Parameter objects, as `.to("cuda")` does:
tied weights stay tied, optimizers built before the move keep working."""

import copy

import pytest
import torch
from torch import nn
from torch.nn.utils import parametrize


class TiedLM(nn.Module):
    """An embedding and an output projection sharing one weight, as GPT-2,
    BERT and T5 tie them (`lm_head.weight = embed.weight`)."""

    def __init__(self, vocab=11, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.body = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, tokens):
        return self.lm_head(torch.tanh(self.body(self.embed(tokens))))


def _train(model, device, steps=3):
    tokens = torch.tensor([[1, 4, 7, 2], [3, 3, 9, 0]], device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(steps):
        opt.zero_grad()
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
        loss.backward()
        opt.step()
    return loss.item()


@pytest.mark.parametrize("move", ["to", "foo", "to_device_dtype"])
def test_tied_weights_stay_tied(foo, move):
    torch.manual_seed(0)
    model = TiedLM()
    before = {name: p for name, p in model.named_parameters()}
    moved = {
        "to": lambda m: m.to("foo"),
        "foo": lambda m: m.foo(),
        "to_device_dtype": lambda m: m.to("foo", torch.float64),
    }[move](model)
    assert moved is model
    assert len(list(model.parameters())) == 3          # embed/lm_head weight counted once
    assert model.lm_head.weight is model.embed.weight
    for name, p in model.named_parameters():
        assert p is before[name] and p.device.type == "foo"


def test_training_a_tied_model_on_foo_matches_cpu(foo):
    torch.manual_seed(0)
    cpu_model = TiedLM()
    foo_model = copy.deepcopy(cpu_model).to("foo")
    cpu_loss, foo_loss = _train(cpu_model, "cpu"), _train(foo_model, "foo")
    assert foo_loss == pytest.approx(cpu_loss, rel=1e-5)
    assert foo_model.lm_head.weight is foo_model.embed.weight
    torch.testing.assert_close(foo_model.embed.weight.cpu(), cpu_model.embed.weight, rtol=1e-5, atol=1e-6)


def test_optimizer_made_before_the_move_updates_the_moved_parameters(foo):
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    model.to("foo")
    before = model.weight.detach().cpu().clone()
    model(torch.ones(3, 4, device="foo")).sum().backward()
    opt.step()
    assert not torch.equal(model.weight.detach().cpu(), before)


def test_gradients_move_with_their_parameters(foo):
    model = nn.Linear(4, 2)
    model(torch.ones(1, 4)).sum().backward()
    weight, grad = model.weight, model.weight.grad
    model.to("foo")
    assert model.weight is weight and model.weight.grad is grad
    assert grad.device.type == "foo" and grad.cpu().equal(torch.ones(2, 4))


def test_load_state_dict_after_the_move_keeps_ties(foo):
    source = TiedLM()
    model = TiedLM().to("foo")
    model.load_state_dict(source.state_dict())
    assert model.lm_head.weight is model.embed.weight
    assert model.embed.weight.device.type == "foo"
    assert model.embed.weight.cpu().equal(source.embed.weight.detach())


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)


def test_parametrized_module_moves_and_keeps_its_original(foo):
    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    original = layer.parametrizations.weight.original
    layer.to("foo")
    assert layer.parametrizations.weight.original is original
    w = layer.weight
    assert w.device.type == "foo" and w.cpu().equal(w.cpu().t())


def test_moving_back_to_cpu_keeps_identity_too(foo):
    model = TiedLM().to("foo")
    weight = model.embed.weight
    model.cpu()
    assert model.embed.weight is weight and weight.device.type == "cpu"
    assert model.lm_head.weight is weight

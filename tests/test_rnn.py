"""Recurrent networks on foo: outputs, final states and gradients equal CPU's.
nn.LSTM and nn.GRU run foo's fused cell kernels, as they run CUDA's."""

import copy

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, nn.utils.rnn.PackedSequence):
        return [out.data]
    return [t for o in out for t in _flatten(o)]


def _run(module, inputs, device):
    module = copy.deepcopy(module).to(device)

    def leaf(x):
        if isinstance(x, tuple):
            return tuple(leaf(t) for t in x)
        return x.detach().to(device).requires_grad_()

    inputs = [leaf(x) for x in inputs]
    outputs = _flatten(module(*inputs))
    sum(o.float().sin().sum() for o in outputs).backward()
    grads = [p.grad for p in module.parameters()] + [x.grad for x in _flatten(inputs)]
    return [o.detach().cpu() for o in outputs], [g.cpu() for g in grads]


def _assert_matches_cpu(module, *inputs):
    cpu_out, cpu_grads = _run(module, inputs, "cpu")
    foo_out, foo_grads = _run(module, inputs, "foo")
    for a, b in zip(foo_out + foo_grads, cpu_out + cpu_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


CONFIGS = {
    "lstm": lambda: nn.LSTM(5, 7),
    "lstm_2layer_bidirectional_batch_first": lambda: nn.LSTM(5, 7, num_layers=2, bidirectional=True,
                                                             batch_first=True),
    "lstm_proj": lambda: nn.LSTM(5, 7, num_layers=2, proj_size=3),
    "lstm_no_bias": lambda: nn.LSTM(5, 7, bias=False),
    "gru": lambda: nn.GRU(5, 7),
    "gru_2layer_bidirectional_batch_first": lambda: nn.GRU(5, 7, num_layers=2, bidirectional=True, batch_first=True),
    "gru_no_bias": lambda: nn.GRU(5, 7, bias=False),
    "rnn_tanh": lambda: nn.RNN(5, 7, num_layers=2),
    "rnn_relu_bidirectional": lambda: nn.RNN(5, 7, nonlinearity="relu", bidirectional=True),
    "lstm_eval_dropout": lambda: nn.LSTM(5, 7, num_layers=3, dropout=0.5).eval(),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_recurrent_layer_matches_cpu(foo, name):
    torch.manual_seed(0)
    module = CONFIGS[name]()
    batch_first = getattr(module, "batch_first", False)
    x = torch.randn(4, 6, 5) if batch_first else torch.randn(6, 4, 5)
    _assert_matches_cpu(module, x)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_initial_state_gets_its_gradient(foo, kind):
    torch.manual_seed(1)
    x = torch.randn(3, 2, 4)
    if kind == "lstm":
        _assert_matches_cpu(nn.LSTM(4, 6), x, (torch.randn(1, 2, 6), torch.randn(1, 2, 6)))
    else:
        _assert_matches_cpu(nn.GRU(4, 6), x, torch.randn(1, 2, 6))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_packed_sequences(foo, kind):
    torch.manual_seed(2)
    module = (nn.LSTM if kind == "lstm" else nn.GRU)(4, 5, bidirectional=True)
    x = torch.randn(6, 3, 4)
    lengths = torch.tensor([6, 4, 2])   # on the CPU, as pack_padded_sequence requires

    def run(device):
        m = copy.deepcopy(module).to(device)
        inp = x.detach().to(device).requires_grad_()
        out, _ = m(pack_padded_sequence(inp, lengths))
        padded, out_lengths = pad_packed_sequence(out)
        padded.sum().backward()
        return padded.detach().cpu(), out_lengths, inp.grad.cpu(), [p.grad.cpu() for p in m.parameters()]

    cpu, on_foo = run("cpu"), run("foo")
    torch.testing.assert_close(on_foo[0], cpu[0], rtol=1e-4, atol=1e-5)
    assert on_foo[1].tolist() == cpu[1].tolist()
    torch.testing.assert_close(on_foo[2], cpu[2], rtol=1e-4, atol=1e-5)
    for a, b in zip(on_foo[3], cpu[3]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells(foo, cell):
    torch.manual_seed(3)
    _assert_matches_cpu(getattr(nn, cell)(4, 6), torch.randn(5, 4))


def test_dropout_between_layers_trains(foo):
    # Dropout masks come from foo's generator, so only their effect is checked.
    torch.manual_seed(4)
    lstm = nn.LSTM(5, 7, num_layers=2, dropout=0.5).to("foo")
    out, _ = lstm(torch.randn(6, 4, 5, device="foo"))
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all().item() for p in lstm.parameters())
    lstm.eval()
    with torch.no_grad():
        x = torch.randn(6, 4, 5, device="foo")
        assert torch.equal(lstm(x)[0].cpu(), lstm(x)[0].cpu())   # no dropout in eval


def test_cell_kernel_runs_on_the_stream_after_its_inputs(foo):
    # The fused cell reads gates that are still being computed on a busy stream.
    torch.manual_seed(5)
    gru = nn.GRU(4, 6)
    x = torch.randn(3, 2, 4)
    expected, _ = gru(x)
    gru_foo = copy.deepcopy(gru).to("foo")
    x_foo = x.to("foo")
    foo._sleep(100)
    out, _ = gru_foo(x_foo * 1.0)
    torch.testing.assert_close(out.detach().cpu(), expected.detach(), rtol=1e-4, atol=1e-5)


def test_mismatched_state_is_a_clear_error(foo):
    gates = torch.randn(2, 12, device="foo")
    with pytest.raises(RuntimeError, match="do not match a state"):
        torch.ops.aten._thnn_fused_gru_cell(gates[:, :9], gates[:, :9], torch.randn(2, 4, device="foo"))
    with pytest.raises(RuntimeError, match="same device"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, torch.randn(2, 3))

"""Nested tensors on foo, as on CUDA: both layouts of torch.nested, their
construction, conversions and element-wise operators, and the transformer
encoder's fast path on a nested batch, equal to CPU and queued on the stream
like foo's other kernels."""
import re

import pytest
import torch
import torch.nn.functional as F

from conftest import held_stream

LAYOUTS = [torch.strided, torch.jagged]


def _parts(seed=0, dim=8, lengths=(3, 5, 2)):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, dim, generator=g) for n in lengths]


def _nested(parts, device, layout=torch.strided):
    return torch.nested.nested_tensor([p.to(device) for p in parts], layout=layout, device=device)


def _padded(nt, padding=0.0):
    return torch.nested.to_padded_tensor(nt, padding)


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_construction_and_conversions_equal_cpu(layout):
    parts = _parts()
    cpu, foo = _nested(parts, "cpu", layout), _nested(parts, "foo", layout)
    assert foo.is_nested and foo.device == torch.device("foo:0") and foo.layout == layout
    assert torch.equal(_padded(foo, -1.0).cpu(), _padded(cpu, -1.0))
    for got, want in zip(foo.unbind(), parts):
        assert got.device.type == "foo" and torch.equal(got.cpu(), want)
    back = foo.to("cpu")
    assert back.is_nested and back.device.type == "cpu"
    assert torch.equal(_padded(back), _padded(cpu))
    again = cpu.to("foo")
    assert again.is_nested and again.device.type == "foo" and torch.equal(_padded(again).cpu(), _padded(cpu))
    made = torch.nested.as_nested_tensor([p.to("foo") for p in parts], layout=layout)
    assert made.device.type == "foo" and torch.equal(_padded(made).cpu(), _padded(cpu))


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_nested_tensors_stay_on_their_device(layout):
    with torch.foo.device(1):
        nt = _nested(_parts(), "foo", layout)
    assert nt.device == torch.device("foo:1")
    assert (nt * 2).device == torch.device("foo:1")
    assert _padded(nt.sin()).device == torch.device("foo:1")


def test_transformer_fast_path_on_a_second_device_equals_cpu():
    parts = _parts()
    with torch.no_grad():
        want = _encoder_layer("cpu")(_nested(parts, "cpu"))
        got = _encoder_layer("foo:1")(_nested(parts, "foo:1"))
    assert got.device == torch.device("foo:1")
    torch.testing.assert_close(_padded(got).cpu(), _padded(want), atol=1e-5, rtol=1e-4)


# b is made from a, so that the two have the same raggedness in either layout.
ELEMENTWISE = {
    "add": lambda a: a + a.cos(), "mul": lambda a: a * a.cos(), "sub": lambda a: a - a.cos(),
    "div_scalar": lambda a: a / 2.0, "mul_scalar": lambda a: a * 3.0, "relu": F.relu, "gelu": F.gelu,
    "silu": F.silu, "tanh": torch.tanh, "sin": torch.sin, "neg": torch.neg, "abs": torch.abs,
    "sqrt_abs": lambda a: a.abs().sqrt(), "softmax": lambda a: a.softmax(-1),
    "linear": lambda a: F.linear(a, torch.linspace(-1, 1, 32).view(4, 8).to(a.device)),
    "layer_norm": lambda a: F.layer_norm(a, (8,), torch.linspace(0.5, 2, 8).to(a.device),
                                         torch.linspace(-1, 1, 8).to(a.device)),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_operators_equal_cpu(layout, name):
    fn = ELEMENTWISE[name]
    want = fn(_nested(_parts(), "cpu", layout))
    got = fn(_nested(_parts(), "foo", layout))
    assert got.is_nested and got.device.type == "foo"
    torch.testing.assert_close(_padded(got).cpu(), _padded(want))


def test_dropout_keeps_and_scales_as_on_cpu():
    nt = _nested([p.abs() + 1 for p in _parts(lengths=(30, 50))], "foo")
    out = F.dropout(nt, 0.5, training=True)
    assert out.is_nested and out.device.type == "foo"
    got, given = _padded(out).cpu(), _padded(nt).cpu()
    kept = got != 0
    assert torch.equal(got[kept], given[kept] * 2)
    assert 0.3 < kept[given != 0].float().mean() < 0.7


def test_inplace_operators_equal_cpu():
    a = _nested(_parts(), "cpu")
    b = _nested(_parts(), "foo")
    for t in (a, b):
        t.mul_(2.0).add_(t).relu_()
    torch.testing.assert_close(_padded(b).cpu(), _padded(a))


def test_batched_matmul_equals_cpu():
    g = torch.Generator().manual_seed(0)
    a = [torch.randn(n, 4, generator=g) for n in (2, 3)]
    b = [torch.randn(4, m, generator=g) for m in (5, 1)]
    want = torch.nested.nested_tensor(a).bmm(torch.nested.nested_tensor(b))
    got = torch.nested.nested_tensor(a, device="foo").bmm(torch.nested.nested_tensor(b, device="foo"))
    torch.testing.assert_close(_padded(got).cpu(), _padded(want))


def test_layer_norm_gradients_equal_cpu():
    grads = {}
    for device in ("cpu", "foo"):
        nt = _nested(_parts(), device).requires_grad_()
        weight = torch.linspace(0.5, 2, 8, device=device, requires_grad=True)
        bias = torch.linspace(-1, 1, 8, device=device, requires_grad=True)
        out = F.layer_norm(nt, (8,), weight, bias)
        (_padded(out) * torch.arange(40.0, device=device).view(5, 8)).sum().backward()
        grads[device] = [_padded(nt.grad), weight.grad, bias.grad]
    for got, want in zip(grads["foo"], grads["cpu"]):
        torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("call", [
    lambda a: torch.where(a > 0, a, a.cos()),
    lambda a: F.layer_norm(a, (8,)),
    lambda a: F.layer_norm(a, (4,), torch.ones(4, device=a.device), torch.zeros(4, device=a.device)),
    lambda a: F.layer_norm(a.transpose(1, 2), (3,), torch.ones(3, device=a.device), torch.zeros(3, device=a.device)),
    lambda a: a + _nested(_parts(lengths=(3, 5, 3)), a.device),
], ids=["where", "layer_norm_without_weight", "layer_norm_wrong_shape", "layer_norm_not_contiguous",
        "add_mismatched"])
def test_refused_calls_raise_as_on_cpu(call):
    with pytest.raises(Exception) as on_cpu:
        call(_nested(_parts(), "cpu"))
    with pytest.raises(type(on_cpu.value), match=re.escape(str(on_cpu.value).splitlines()[0])):
        call(_nested(_parts(), "foo"))


@pytest.mark.parametrize("fuse_transform_0213", [False, True])
def test_nested_from_padded_equals_cpu(fuse_transform_0213):
    padded = torch.randn(3, 2, 6, 4) if fuse_transform_0213 else torch.randn(3, 6, 8)
    sizes = torch.tensor([[4, 8], [6, 8], [1, 8]])
    want = torch._nested_from_padded(padded, sizes, fuse_transform_0213)
    got = torch._nested_from_padded(padded.to("foo"), sizes, fuse_transform_0213)
    assert got.is_nested and got.device.type == "foo"
    assert torch.equal(_padded(got).cpu(), _padded(want))


def test_nested_from_padded_refuses_sizes_beyond_the_padding():
    with pytest.raises(RuntimeError, match="more than the padded size"):
        torch._nested_from_padded(torch.randn(2, 3, 8, device="foo"), torch.tensor([[4, 8], [1, 8]]))


def _encoder_layer(device, **kwargs):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, **kwargs)
    return layer.to(device).eval()


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True}, {"activation": "gelu"}],
                         ids=["default", "norm_first", "gelu"])
def test_transformer_encoder_fast_path_on_a_nested_batch_equals_cpu(kwargs):
    parts = _parts()
    with torch.no_grad():
        want = _encoder_layer("cpu", **kwargs)(_nested(parts, "cpu"))
        got = _encoder_layer("foo", **kwargs)(_nested(parts, "foo"))
    assert got.is_nested and got.device.type == "foo"
    torch.testing.assert_close(_padded(got).cpu(), _padded(want), atol=1e-5, rtol=1e-4)


def test_transformer_encoder_with_padding_mask_takes_the_nested_fast_path_as_on_cpu():
    # nn.TransformerEncoder turns a padded batch and its mask into a nested
    # tensor on the fast path, and back.
    torch.manual_seed(0)
    x = torch.randn(3, 5, 8)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 2 + [True] * 3])
    encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                          enable_nested_tensor=True).eval()
    with torch.no_grad():
        want = encoder(x, src_key_padding_mask=mask)
        got = encoder.to("foo")(x.to("foo"), src_key_padding_mask=mask.to("foo"))
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-4)


def test_nested_kernels_run_on_the_stream_after_their_inputs(foo):
    # The input's buffer is written by a kernel queued behind a gate: a
    # nested kernel that read it on the host would read it unwritten, and
    # one that made the host wait would wait for the gate.
    parts = _parts()
    layer = _encoder_layer("foo")
    before = set(foo.synchronizing_ops())
    with torch.no_grad():
        want = _padded(_encoder_layer("cpu")(_nested(parts, "cpu")).sin())
        nt = _nested(parts, "foo")
        layer(nt)  # once before, so that first-call work (imports, meta functions) is done
        with held_stream() as still_held:
            busy = nt * 1.0
            padded = _padded(layer(busy).sin())
            assert still_held() and not foo.current_stream().query()
    assert set(foo.synchronizing_ops()) == before
    torch.testing.assert_close(padded.cpu(), want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("shape", [(2, 5, 24), (2, 0, 24)], ids=["batch", "no_tokens"])
def test_qkv_split_equals_cpu(shape):
    qkv, bias = torch.randn(shape), torch.randn(24)
    want = torch._transform_bias_rescale_qkv(qkv, bias, 4)
    got = torch._transform_bias_rescale_qkv(qkv.to("foo"), bias.to("foo"), 4)
    for g, w in zip(got, want):
        assert g.device.type == "foo"
        torch.testing.assert_close(g.cpu(), w)


def test_qkv_split_of_an_empty_batch_is_empty():
    # CPU's kernel crashes on it (torch 2.13); CUDA's launches nothing.
    got = torch._transform_bias_rescale_qkv(torch.randn(0, 3, 24, device="foo"), torch.randn(24, device="foo"), 4)
    assert [tuple(t.shape) for t in got] == [(0, 4, 3, 2)] * 3


def test_qkv_split_refuses_a_bias_of_the_wrong_size():
    with pytest.raises(RuntimeError, match="expected a bias of size"):
        torch._transform_bias_rescale_qkv(torch.randn(2, 5, 24, device="foo"), torch.randn(8, device="foo"), 4)


def test_operators_cuda_has_no_nested_kernel_for_raise_at_the_call():
    nt = _nested(_parts(), "foo")
    with pytest.raises(NotImplementedError, match="NestedTensor"):
        torch.ops.aten.sum.dim_IntList(nt, [-1], True)

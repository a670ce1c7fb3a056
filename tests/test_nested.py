"""Nested tensors on foo, as on CUDA: both layouts of torch.nested, their
construction, conversions and element-wise operators, equal to CPU and
queued on the stream like foo's other kernels. The strided layout's layer
norm, and so the transformer encoder's fast path on a nested batch, are not
yet served on foo (marked xfail: they raise NotImplementedError)."""
import pytest
import torch
import torch.nn.functional as F

import torch_foo  # noqa: F401  (already autoloaded; explicit for readers)

LAYOUTS = [torch.strided, torch.jagged]


def _parts(seed=0, dim=8):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, dim, generator=g) for n in (3, 5, 2)]


def _nested(parts, device, layout):
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
    assert again.is_nested and torch.equal(_padded(again).cpu(), _padded(cpu))
    made = torch.nested.as_nested_tensor([p.to("foo") for p in parts], layout=layout)
    assert made.device.type == "foo" and torch.equal(_padded(made).cpu(), _padded(cpu))


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_nested_tensors_stay_on_their_device(layout):
    with torch.foo.device(1):
        nt = _nested(_parts(), "foo", layout)
    assert nt.device == torch.device("foo:1")
    assert (nt * 2).device == torch.device("foo:1")
    assert _padded(nt.sin()).device == torch.device("foo:1")


def _pair(a, b, device, layout):
    """Two nested tensors of the same structure (jagged ones share their
    offsets: binary operators refuse two ragged dimensions made apart)."""
    first = _nested(a, device, layout)
    if layout == torch.jagged:
        return first, torch.nested.nested_tensor_from_jagged(torch.cat(b).to(device), first.offsets())
    return first, _nested(b, device, layout)


ELEMENTWISE = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
    "div_scalar": lambda a, b: a / 2.0, "mul_scalar": lambda a, b: a * 3.0, "relu": lambda a, b: F.relu(a),
    "gelu": lambda a, b: F.gelu(a), "silu": lambda a, b: F.silu(a), "tanh": lambda a, b: a.tanh(),
    "sin": lambda a, b: a.sin(), "cos": lambda a, b: a.cos(), "neg": lambda a, b: -a,
    "abs": lambda a, b: a.abs(), "sqrt_abs": lambda a, b: a.abs().sqrt(), "softmax": lambda a, b: a.softmax(-1),
    "where": lambda a, b: torch.where(a > 0, a, b), "linear": lambda a, b: F.linear(a, torch.ones(4, 8)
                                                                                     .to(a.device)),
}


# Strided nested layer norm calls layer norm's DispatchStub for the
# tensor's device, which has no foo entry; foo leaves it unregistered.
NO_NESTED_LAYER_NORM = pytest.mark.xfail(raises=NotImplementedError, strict=True,
                                         reason="strided nested layer norm is not registered for foo")


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_operators_equal_cpu(layout, name):
    fn = ELEMENTWISE[name]
    a, b = _parts(0), _parts(1)
    try:
        want = fn(*_pair(a, b, "cpu", layout))
    except (RuntimeError, ValueError) as e:  # strided where: no nested kernel on CPU or CUDA
        with pytest.raises(type(e), match=str(e)[:20]):
            fn(*_pair(a, b, "foo", layout))
        return
    got = fn(*_pair(a, b, "foo", layout))
    assert got.is_nested and got.device.type == "foo"
    torch.testing.assert_close(_padded(got).cpu(), _padded(want))


@pytest.mark.parametrize("layout", [torch.jagged, pytest.param(torch.strided, marks=NO_NESTED_LAYER_NORM)],
                         ids=str)
def test_layer_norm_equals_cpu(layout):
    def layer_norm(nt):
        return F.layer_norm(nt, (8,), torch.ones(8, device=nt.device), torch.zeros(8, device=nt.device))

    want = layer_norm(_nested(_parts(), "cpu", layout))
    got = layer_norm(_nested(_parts(), "foo", layout))
    torch.testing.assert_close(_padded(got).cpu(), _padded(want))


def test_inplace_operators_equal_cpu():
    a = _nested(_parts(), "cpu", torch.strided)
    b = _nested(_parts(), "foo", torch.strided)
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


def _encoder_layer(device):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return layer.to(device).eval()


@NO_NESTED_LAYER_NORM
def test_transformer_encoder_fast_path_on_a_nested_batch_equals_cpu():
    parts = _parts()
    with torch.no_grad():
        want = _encoder_layer("cpu")(_nested(parts, "cpu", torch.strided))
        got = _encoder_layer("foo")(_nested(parts, "foo", torch.strided))
    assert got.is_nested and got.device.type == "foo"
    torch.testing.assert_close(_padded(got).cpu(), _padded(want), atol=1e-5, rtol=1e-4)


@NO_NESTED_LAYER_NORM
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


def test_nested_kernels_are_queued_not_waited_for():
    parts = _parts()
    weight = torch.randn(8, 8, device="foo")
    nt = _nested(parts, "foo", torch.strided)

    def calls():
        return _padded(F.linear(nt, weight).softmax(-1).sin() + nt)

    calls()  # once before, so that first-call work (imports, meta functions) is done
    torch.foo.synchronize()
    before = set(torch.foo.synchronizing_ops())
    torch.foo._sleep(2000)   # the stream is busy until long after the calls below
    padded = calls()
    assert not torch.foo.current_stream().query()     # nothing above waited for the stream
    assert set(torch.foo.synchronizing_ops()) == before
    torch.foo.synchronize()
    assert padded.shape == (3, 5, 8)


def test_operators_cuda_has_no_nested_kernel_for_raise_as_on_cuda():
    nt = _nested(_parts(), "foo", torch.strided)
    with pytest.raises(NotImplementedError, match="NestedTensorfoo"):
        torch.ops.aten.sum.dim_IntList(nt, [-1])

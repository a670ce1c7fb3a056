"""Dtypes as CUDA has them: saved normalization statistics in CUDA's
accumulation type, kernels rather than decompositions where CPU and CUDA
both have one, wider computation for dtypes only CUDA takes, and CUDA's
errors for dtypes only CPU takes. tests/test_opinfo.py sweeps every operator;
these are the cases users meet directly."""

import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchgen
import yaml

BUSY_MS = 150  # the stream is still busy when the host has moved on

REDUCED = [torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
def test_batch_norm_saves_statistics_in_float_as_cuda_does(dtype):
    x = torch.randn(4, 6, 5, dtype=dtype, device="foo")
    w, b = torch.randn(6, dtype=dtype, device="foo"), torch.randn(6, dtype=dtype, device="foo")
    rm, rv = torch.zeros(6, dtype=dtype, device="foo"), torch.ones(6, dtype=dtype, device="foo")
    for out in (torch.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5),
                torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.1, 1e-5),
                torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)):
        assert out[0].dtype == dtype
        assert out[1].dtype == out[2].dtype == torch.float32
    _, mean, invstd = torch.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
    cpu = x.cpu().float()
    torch.testing.assert_close(mean.cpu(), cpu.mean((0, 2)), rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(invstd.cpu(), (cpu.var((0, 2), unbiased=False) + 1e-5).rsqrt(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
def test_layer_norm_saves_statistics_in_float_as_cuda_does(dtype):
    x = torch.randn(3, 4, 8, dtype=dtype, device="foo")
    _, mean, rstd = torch.native_layer_norm(x, [8], None, None, 1e-5)
    assert mean.dtype == rstd.dtype == torch.float32
    assert mean.shape == (3, 4, 1)


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
@pytest.mark.parametrize("module", ["BatchNorm1d", "LayerNorm", "GroupNorm"])
def test_reduced_precision_normalization_trains_as_on_cpu(dtype, module):
    make = {"BatchNorm1d": lambda: nn.BatchNorm1d(6), "LayerNorm": lambda: nn.LayerNorm(5),
            "GroupNorm": lambda: nn.GroupNorm(3, 6)}[module]
    torch.manual_seed(0)
    cpu_mod = make().to(dtype)
    foo_mod = make().to(dtype).to("foo")
    foo_mod.load_state_dict(cpu_mod.state_dict())
    x = torch.randn(4, 6, 5, dtype=dtype)
    outs = []
    for mod, inp in ((cpu_mod, x.clone().requires_grad_()), (foo_mod, x.to("foo").requires_grad_())):
        y = mod(inp)
        (y.float() ** 2).sum().backward()
        outs.append((y, inp.grad, [p.grad for p in mod.parameters()], list(mod.buffers())))
    (y_c, gx_c, gp_c, b_c), (y_f, gx_f, gp_f, b_f) = outs
    # The same CPU kernels run on both sides: equal to the bit.
    assert torch.equal(y_f.cpu(), y_c)
    assert torch.equal(gx_f.cpu(), gx_c)
    for f, c in zip(gp_f + b_f, gp_c + b_c):
        assert torch.equal(f.cpu(), c)


def test_group_norm_runs_the_kernel_not_its_decomposition():
    # The decomposition computes in bfloat16 and rounds differently.
    torch.manual_seed(0)
    x = torch.randn(2, 6, 7, dtype=torch.bfloat16)
    w, b = torch.randn(6, dtype=torch.bfloat16), torch.randn(6, dtype=torch.bfloat16)
    want = torch.native_group_norm(x, w, b, 2, 6, 7, 3, 1e-5)
    got = torch.native_group_norm(x.to("foo"), w.to("foo"), b.to("foo"), 2, 6, 7, 3, 1e-5)
    for g, c in zip(got, want):
        assert g.dtype == c.dtype
        assert torch.equal(g.cpu(), c)


def test_group_norm_bad_groups_raise_at_the_call():
    x = torch.randn(2, 6, 7, device="foo")
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        torch.native_group_norm(x, None, None, 2, 6, 7, 4, 1e-5)
    with pytest.raises(RuntimeError, match="weight and bias"):
        torch.native_group_norm(x, torch.ones(5, device="foo"), None, 2, 6, 7, 3, 1e-5)


def _ops_with_cpu_and_cuda_kernels_and_a_composite():
    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged/ATen/native/native_functions.yaml")
    with open(path) as f:
        functions = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    names = []
    for fn in functions:
        keys = {k.strip() for ks in (fn.get("dispatch") or {}) for k in ks.split(",")}
        if {"CPU", "CUDA"} <= keys and keys & {"CompositeImplicitAutograd", "CompositeExplicitAutograd",
                                               "CompositeExplicitAutogradNonFunctional"}:
            names.append(fn["func"].split("(")[0])
    return names


def test_ops_cuda_runs_with_a_kernel_get_a_foo_kernel_not_a_decomposition():
    names = _ops_with_cpu_and_cuda_kernels_and_a_composite()
    assert "native_group_norm" in names and "mish_backward" in names  # the derivation still finds them
    missing = [n for n in names if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{n}", "PrivateUse1")]
    assert not missing, f"these would run their decomposition on foo: {missing}"


def test_mish_backward_in_half_equals_cpu():
    torch.manual_seed(0)
    x = torch.randn(20, dtype=torch.float16)
    g = torch.randn(20, dtype=torch.float16)
    want = torch.ops.aten.mish_backward(g, x)
    got = torch.ops.aten.mish_backward(g.to("foo"), x.to("foo"))
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_complex_lu_solve_equals_cpu(left, adjoint):
    torch.manual_seed(0)
    a = torch.randn(3, 3, dtype=torch.complex64)
    b = torch.randn(3, 4, dtype=torch.complex64) if left else torch.randn(4, 3, dtype=torch.complex64)
    lu, piv = torch.linalg.lu_factor(a)
    want = torch.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint)
    got = torch.linalg.lu_solve(lu.to("foo"), piv.to("foo"), b.to("foo"), left=left, adjoint=adjoint)
    assert got.is_conj() == want.is_conj()
    torch.testing.assert_close(got.cpu(), want)


CUDA_REFUSES = {
    "mm": lambda d: torch.mm(torch.ones(2, 2, dtype=torch.int64, device=d), torch.ones(2, 2, dtype=torch.int64, device=d)),
    "matmul_vectors": lambda d: torch.ones(3, dtype=torch.int32, device=d) @ torch.ones(3, dtype=torch.int32, device=d),
    "linear": lambda d: F.linear(torch.ones(2, 3, dtype=torch.int64, device=d), torch.ones(4, 3, dtype=torch.int64, device=d)),
    "conv2d": lambda d: F.conv2d(torch.ones(1, 1, 4, 4, dtype=torch.int64, device=d),
                                 torch.ones(1, 1, 2, 2, dtype=torch.int64, device=d)),
    "max_pool2d": lambda d: F.max_pool2d(torch.ones(1, 1, 4, 4, dtype=torch.int64, device=d), 2),
    "avg_pool2d": lambda d: F.avg_pool2d(torch.ones(1, 1, 4, 4, dtype=torch.int64, device=d), 2),
    "histc_half": lambda d: torch.histc(torch.ones(4, dtype=torch.float16, device=d), bins=3),
    "histogram": lambda d: torch.histogram(torch.ones(4, device=d), bins=3),
    "upsample_uint8": lambda d: F.interpolate(torch.ones(1, 1, 4, 4, dtype=torch.uint8, device=d), scale_factor=2,
                                              mode="bilinear"),
}


@pytest.mark.parametrize("name", sorted(CUDA_REFUSES))
def test_dtypes_only_cpu_takes_raise_as_on_cuda(name):
    CUDA_REFUSES[name]("cpu")  # CPU computes it
    with pytest.raises((RuntimeError, NotImplementedError), match="not implemented for|CUDA"):
        CUDA_REFUSES[name]("foo")
    torch.foo.synchronize()  # nothing was queued that fails later
    assert torch.mm(torch.ones(2, 2, device="foo"), torch.ones(2, 2, device="foo")).sum().item() == 8


def test_integer_histc_is_computed_and_ordered_on_the_stream(foo):
    x = torch.tensor([0, 1, 1, 2, 5, 7], dtype=torch.int32, device="foo")
    foo._sleep(BUSY_MS)
    x.add_(1)  # queued behind the sleep, before the histogram
    got = torch.histc(x, bins=4, min=0, max=8)
    assert got.dtype == torch.int32
    want = torch.histc((x.cpu()).double(), bins=4, min=0, max=8).int()
    assert torch.equal(got.cpu(), want)
    assert torch.equal(want, torch.tensor([1, 3, 0, 2], dtype=torch.int32))


@pytest.mark.parametrize("fn", ["exp", "sqrt", "tanh", "sigmoid"])
def test_complex32_math_is_computed_in_complex64_and_cast_back(fn):
    torch.manual_seed(0)
    x = torch.randn(8, dtype=torch.complex64) * 0.5
    got = getattr(torch, fn)(x.to(torch.complex32).to("foo"))
    assert got.dtype == torch.complex32
    want = getattr(torch, fn)(x.to(torch.complex32).to(torch.complex64)).to(torch.complex32)
    assert torch.equal(got.cpu().view(torch.float16), want.view(torch.float16))


def test_complex32_in_place_and_binary_ops():
    a = (torch.randn(6, dtype=torch.complex64) * 0.5).to(torch.complex32)
    b = (torch.randn(6, dtype=torch.complex64) * 0.5 + 1).to(torch.complex32)
    fa = a.to("foo")
    fa.exp_()
    torch.testing.assert_close(fa.cpu().to(torch.complex64), a.to(torch.complex64).exp(), rtol=2e-3, atol=2e-3)
    q = a.to("foo") / b.to("foo")
    assert q.dtype == torch.complex32
    torch.testing.assert_close(q.cpu().to(torch.complex64), a.to(torch.complex64) / b.to(torch.complex64),
                               rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("fn", ["div", "pow"])
def test_half_with_complex32_second_is_computed_too(fn):
    # The complex32 operand need not come first: half / complex32 widens as
    # complex32 / half does (CUDA computes both).
    h = torch.tensor([1.0, 2.0, 4.0], dtype=torch.half)
    c = torch.tensor([1 + 1j, 2, 0.5j], dtype=torch.complex32)
    got = getattr(torch, fn)(h.to("foo"), c.to("foo"))
    assert got.dtype == torch.complex32
    want = getattr(torch, fn)(h.to(torch.complex64), c.to(torch.complex64))
    torch.testing.assert_close(got.cpu().to(torch.complex64), want, rtol=2e-3, atol=2e-3)


def test_bool_abs_and_trace_as_on_cuda():
    m = torch.tensor([[True, False], [False, True]])
    assert torch.equal(torch.abs(m.to("foo")).cpu(), m)
    t = torch.trace(m.to("foo"))
    assert t.dtype == torch.int64 and t.item() == 2


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
def test_reduced_precision_3d_pooling_and_margin_losses(dtype):
    torch.manual_seed(0)
    x = torch.randn(1, 2, 4, 4, 4)
    got = F.avg_pool3d(x.to(dtype).to("foo"), 2)
    assert got.dtype == dtype
    assert torch.equal(got.cpu(), F.avg_pool3d(x.to(dtype).float(), 2).to(dtype))
    inp, target = torch.randn(3, 5), torch.tensor([1, 0, 4])
    got = F.multi_margin_loss(inp.to(dtype).to("foo"), target.to("foo"))
    want = F.multi_margin_loss(inp.to(dtype).float(), target).to(dtype)
    assert got.dtype == dtype and torch.equal(got.cpu(), want)

"""The foo custom operators: kernels on CPU, foo and Meta, C++ autograd."""

import pytest
import torch

import torch_foo

# torch 2.13's opcheck checks autograd registration only on CPU/CUDA/XPU
# inputs; on foo it runs every other check.
ON_FOO = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")


@pytest.mark.parametrize("device", ["cpu", "foo"])
def test_mymuladd(foo, device):
    a = torch.randn(4, 3, device=device, requires_grad=True)
    b = torch.randn(4, 3, device=device, requires_grad=True)
    out = torch_foo.ops.mymuladd(a, b, 2.5)
    assert out.device.type == device
    torch.testing.assert_close(out.detach().cpu(), (a * b + 2.5).detach().cpu())
    out.sum().backward()
    torch.testing.assert_close(a.grad.cpu(), b.detach().cpu())
    torch.testing.assert_close(b.grad.cpu(), a.detach().cpu())
    with torch.no_grad():
        assert not torch.ops.foo.mymuladd(a, b, 1.0).requires_grad


@pytest.mark.parametrize("device", ["cpu", "foo"])
def test_scaled_silu_and_its_own_backward(foo, device):
    x = torch.randn(16, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch_foo.ops.scaled_silu(t, 1.7), (x,))
    assert torch.autograd.gradgradcheck(lambda t: torch_foo.ops.scaled_silu(t, 1.7), (x,))
    y = torch_foo.ops.scaled_silu(x, 2.0)
    torch.testing.assert_close(y.detach().cpu(), (2.0 * x * torch.sigmoid(x)).detach().cpu())
    assert "ScaledSiluFunction" in y.grad_fn.name()  # the C++ autograd Function


def test_gradcheck_mymuladd_on_foo(foo):
    a = torch.randn(3, dtype=torch.float64, device="foo", requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, device="foo", requires_grad=True)
    assert torch.autograd.gradcheck(lambda p, q: torch.ops.foo.mymuladd(p, q, 0.5), (a, b))


@pytest.mark.parametrize("device", ["cpu", "foo"])
def test_opcheck(foo, device):
    utils = ON_FOO if device == "foo" else torch.library._OPCHECK_DEFAULT_UTILS
    a, b = (torch.randn(5, device=device, requires_grad=True) for _ in range(2))
    for op, args in ((torch.ops.foo.mymuladd.default, (a, b, 2.0)),
                     (torch.ops.foo.scaled_silu.default, (a, 0.5)),
                     (torch.ops.foo.scaled_silu_backward.default, (b.detach(), a.detach(), 0.5))):
        result = torch.library.opcheck(op, args, test_utils=utils)
        assert set(result.values()) == {"SUCCESS"}, result


def test_fake_tensors_give_shapes_only():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(2, 7)
        out = torch.ops.foo.mymuladd(a, a, 1.0)
    assert out.shape == (2, 7)


def test_bad_input_is_a_clear_error(foo):
    a = torch.ones(3, device="foo")
    with pytest.raises(RuntimeError, match=r"foo::mymuladd: the tensors must have the same shape, got \[3\] and \[4\]"):
        torch_foo.ops.mymuladd(a, torch.ones(4, device="foo"), 1.0)
    with pytest.raises(RuntimeError, match="same device"):
        torch_foo.ops.mymuladd(a, torch.ones(3), 1.0)
    with pytest.raises(RuntimeError, match="floating-point"):
        torch_foo.ops.mymuladd(a.long(), a.long(), 1.0)
    with pytest.raises((TypeError, RuntimeError)):
        torch.ops.foo.mymuladd(a, a, "two")
    with pytest.raises(TypeError):
        torch_foo.ops.scaled_silu(a, scale=None)

"""Autocast and GradScaler on foo."""

import warnings

import pytest
import torch

LOWER = [
    ("mm", lambda a, b: a @ b),
    ("linear", lambda a, b: torch.nn.functional.linear(a, b)),
    ("bmm", lambda a, b: torch.bmm(a[None], b[None])),
    ("addmm", lambda a, b: torch.addmm(a, a, b)),
    ("baddbmm", lambda a, b: torch.baddbmm(a[None], a[None], b[None])),
    ("conv2d", lambda a, b: torch.nn.functional.conv2d(a[None, None], b[None, None])),
]
FLOAT32 = [
    ("softmax", lambda a, b: torch.softmax(a, 1)),
    ("log_softmax", lambda a, b: torch.log_softmax(a, 1)),
    ("layer_norm", lambda a, b: torch.nn.functional.layer_norm(a, (4,))),
    ("group_norm", lambda a, b: torch.nn.functional.group_norm(a[None], 2)),
    ("mse_loss", lambda a, b: torch.nn.functional.mse_loss(a, b)),
    ("exp", lambda a, b: torch.exp(a)),
    ("log", lambda a, b: torch.log(a.abs() + 1)),
    ("pow", lambda a, b: torch.pow(a, 2)),
    ("sum", lambda a, b: torch.sum(a)),
    ("cumsum", lambda a, b: torch.cumsum(a, 0)),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_casts_as_cuda_does(foo, dtype):
    a, b = torch.randn(4, 4, device="foo"), torch.randn(4, 4, device="foo")
    with torch.autocast("foo", dtype=dtype):
        for name, fn in LOWER:
            assert fn(a, b).dtype == dtype, name
        for name, fn in FLOAT32:
            assert fn(a.to(dtype), b.to(dtype)).dtype == torch.float32, name
        mixed = torch.cat([a.to(dtype), b])            # promote: the widest input
        assert mixed.dtype == torch.float32
        assert torch.addcmul(a.to(dtype), b, b).dtype == torch.float32
    assert (a @ b).dtype == torch.float32              # off again


def test_autocast_module_and_settings(foo):
    assert foo.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    assert torch.amp.is_autocast_available("foo")
    with foo.amp.autocast(dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("foo")
        assert torch.get_autocast_dtype("foo") == torch.bfloat16
    before = torch.get_autocast_dtype("foo")
    torch.set_autocast_dtype("foo", torch.bfloat16)
    try:
        with torch.autocast("foo"):
            assert (torch.ones(2, 2, device="foo") @ torch.ones(2, 2, device="foo")).dtype == torch.bfloat16
    finally:
        torch.set_autocast_dtype("foo", before)


def test_unsupported_autocast_dtype_warns_and_disables(foo):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast("foo", dtype=torch.float64):
            out = torch.ones(2, 2, device="foo") @ torch.ones(2, 2, device="foo")
    assert out.dtype == torch.float32
    assert any("not supported" in str(w.message) for w in caught)


def test_binary_cross_entropy_is_refused_under_autocast(foo):
    p = torch.full((3,), 0.5, device="foo")
    with torch.autocast("foo", dtype=torch.float16), pytest.raises(RuntimeError, match="unsafe to autocast"):
        torch.nn.functional.binary_cross_entropy(p, p)


def test_grad_scaler_skips_inf_steps_and_updates_the_scale_on_foo(foo):
    model = torch.nn.Linear(3, 1).foo()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("foo", init_scale=1024.0, growth_interval=1)
    before = model.weight.detach().cpu().clone()
    loss = model(torch.full((2, 3), float("inf"), device="foo")).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(model.weight.detach().cpu(), before)   # step skipped
    assert scaler.get_scale() == 512.0                        # backed off
    opt.zero_grad()
    loss = model(torch.ones(2, 3, device="foo")).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(model.weight.detach().cpu(), before)
    assert scaler.get_scale() == 1024.0                       # grew after a good step
    assert "aten::_amp_update_scale_" not in foo.fallback_ops()
    assert "aten::_amp_foreach_non_finite_check_and_unscale_" not in foo.fallback_ops()


def test_amp_kernels_check_their_devices(foo):
    grads = [torch.ones(3, device="foo")]
    with pytest.raises(RuntimeError, match="found_inf must be a foo tensor, got one on cpu"):
        torch._amp_foreach_non_finite_check_and_unscale_(grads, torch.zeros(1), torch.ones(1, device="foo"))
    with pytest.raises(RuntimeError, match="every gradient must be on foo:0"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(3, device="foo:1")], torch.zeros(1, device="foo"), torch.ones(1, device="foo"))


@pytest.mark.parametrize("case", ["inv_scale double", "found_inf int", "int grads", "tracker float",
                                  "two-element scale"])
def test_amp_kernels_check_their_arguments_at_the_call_as_cuda(foo, case):
    # Custom grad scalers call these directly: a wrong argument raises at
    # the call, not later at an unrelated synchronization.
    f = dict(device="foo")
    call, message = {
        "inv_scale double": (lambda: torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, **f)], torch.zeros(1, **f), torch.ones(1, dtype=torch.double, **f)),
            "inv_scale must be a float tensor"),
        "found_inf int": (lambda: torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, **f)], torch.zeros(1, dtype=torch.int, **f), torch.ones(1, **f)),
            "found_inf must be a float tensor"),
        "int grads": (lambda: torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, dtype=torch.int, **f)], torch.zeros(1, **f), torch.ones(1, **f)),
            "floating-point"),
        "tracker float": (lambda: torch._amp_update_scale_(
            torch.ones(1, **f), torch.zeros(1, **f), torch.zeros(1, **f), 2.0, 0.5, 1),
            "growth_tracker must be an int tensor"),
        "two-element scale": (lambda: torch._amp_update_scale_(
            torch.ones(2, **f), torch.zeros(1, dtype=torch.int, **f), torch.zeros(1, **f), 2.0, 0.5, 1),
            "current_scale must be a 1-element tensor"),
    }[case]
    with pytest.raises(RuntimeError, match=message):
        call()
    foo.synchronize()  # nothing was queued to fail later


def test_optimizer_state_on_the_cpu_is_a_clear_error(foo):
    param = torch.nn.Parameter(torch.ones(3, device="foo"))
    opt = torch.optim.Adam([param], foreach=True)
    param.grad = torch.ones(3, device="foo")
    opt.step()
    state = opt.state[param]
    state["exp_avg"], state["exp_avg_sq"] = state["exp_avg"].cpu(), state["exp_avg_sq"].cpu()
    with pytest.raises(RuntimeError, match="same device"):
        opt.step()


def test_custom_fwd_and_bwd_cast_inputs_and_keep_forwards_autocast_state(foo):
    """torch.foo.amp.custom_fwd/custom_bwd, as torch.cuda.amp's: inputs cast
    to cast_inputs with autocast off inside forward, and backward run with
    forward's autocast state."""
    seen = {}

    class Square(torch.autograd.Function):
        @staticmethod
        @foo.amp.custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, x):
            seen["forward"] = (x.dtype, torch.is_autocast_enabled("foo"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @foo.amp.custom_bwd
        def backward(ctx, grad):
            seen["backward"] = torch.is_autocast_enabled("foo")
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(8, device="foo", dtype=torch.float16, requires_grad=True)
    with torch.autocast("foo", dtype=torch.float16):
        y = Square.apply(x)
    y.sum().backward()
    assert seen == {"forward": (torch.float32, False), "backward": False}
    assert y.dtype == torch.float32
    torch.testing.assert_close(x.grad, (2 * x.detach().float()).half())

    class Identity(torch.autograd.Function):
        @staticmethod
        @foo.amp.custom_fwd
        def forward(ctx, x):
            seen["forward"] = (x.dtype, torch.is_autocast_enabled("foo"))
            return x.clone()

        @staticmethod
        @foo.amp.custom_bwd
        def backward(ctx, grad):
            seen["backward"] = (torch.is_autocast_enabled("foo"), torch.get_autocast_dtype("foo"))
            return grad

    with torch.autocast("foo", dtype=torch.bfloat16):
        y = Identity.apply(x.detach().float().requires_grad_())
    y.sum().backward()  # outside autocast: custom_bwd restores forward's state
    assert seen == {"forward": (torch.float32, True), "backward": (True, torch.bfloat16)}

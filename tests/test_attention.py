"""F.scaled_dot_product_attention on foo: the fused kernel (PyTorch's
OVERRIDEABLE backend over CPU's flash attention) where CPU's flash kernel
serves, math elsewhere; results and gradients against CPU."""

import re
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from conftest import held_stream

FUSED, MATH, FLASH = SDPBackend.OVERRIDEABLE.value, SDPBackend.MATH.value, SDPBackend.FLASH_ATTENTION.value
FORWARD = "aten::_scaled_dot_product_fused_attention_overrideable"
BACKWARD = "aten::_scaled_dot_product_fused_attention_overrideable_backward"
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2)}

B, H, L, S, E = 2, 4, 40, 48, 16


def qkv(dtype=torch.float32, heads_kv=H, l=L, s=S, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, H, l, E, generator=g).to(dtype), torch.randn(B, heads_kv, s, E, generator=g).to(dtype),
            torch.randn(B, heads_kv, s, E, generator=g).to(dtype))


def masks(dtype):
    """Every mask form the public function accepts and CPU's flash kernel serves."""
    g = torch.Generator().manual_seed(1)
    keep = torch.rand(B, H, L, S, generator=g) > 0.3
    keep[..., 0] = True  # no row fully masked
    return {
        "none": dict(),
        "causal": dict(is_causal=True),
        "bool_2d": dict(attn_mask=keep[0, 0]),
        "bool_4d": dict(attn_mask=keep),
        "bool_padding_b11s": dict(attn_mask=keep[:, :1, :1, :]),
        "float_2d": dict(attn_mask=torch.randn(L, S, generator=g).to(dtype)),
        "float32_mask_any_dtype": dict(attn_mask=torch.randn(L, S, generator=g)),
        "float_4d": dict(attn_mask=torch.randn(B, H, L, S, generator=g).to(dtype)),
        "float_broadcast_1h1s": dict(attn_mask=torch.randn(1, H, 1, S, generator=g).to(dtype)),
        "float_broadcast_b1ls": dict(attn_mask=torch.randn(B, 1, L, S, generator=g).to(dtype)),
        "float_broadcast_1s": dict(attn_mask=torch.randn(1, S, generator=g).to(dtype)),
        "causal_and_mask": dict(is_causal=True, attn_mask=torch.randn(L, S, generator=g).to(dtype)),
    }


def on_foo(kwargs):
    return {k: v.to("foo") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}


def forward_backward(q, k, v, **kwargs):
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    grad = torch.linspace(-1, 1, out.numel(), dtype=torch.float32).view(out.shape).to(out.dtype).to(out.device)
    out.backward(grad)
    return [t.detach().cpu() for t in (out, q.grad, k.grad, v.grad)]


def ops_run(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
        torch.foo.synchronize()
    return {e.key for e in prof.key_averages()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", list(masks(torch.float32)))
def test_forward_and_gradients_equal_cpu(foo, form, dtype):
    q, k, v = qkv(dtype)
    kwargs = masks(dtype)[form]
    qf, kf, vf = (t.to("foo") for t in (q, k, v))
    assert torch._fused_sdp_choice(q, k, v, **kwargs) == FLASH  # CPU takes its flash kernel
    assert torch._fused_sdp_choice(qf, kf, vf, **on_foo(kwargs)) == FUSED
    expected = forward_backward(q, k, v, **kwargs)
    got = forward_backward(qf, kf, vf, **on_foo(kwargs))
    for name, e, g in zip(["out", "grad_q", "grad_k", "grad_v"], expected, got):
        assert g.stride() == e.stride(), name
        torch.testing.assert_close(g, e, **TOL[dtype], msg=name)


def test_the_fused_kernel_runs_not_the_math_decomposition(foo):
    q, k, v = (t.to("foo").requires_grad_() for t in qkv())
    ops = ops_run(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward())
    assert FORWARD in ops and BACKWARD in ops
    assert not {"aten::_scaled_dot_product_attention_math", "aten::_softmax", "aten::bmm"} & ops
    assert FORWARD not in torch.foo.fallback_ops() and BACKWARD not in torch.foo.fallback_ops()


@pytest.mark.parametrize("heads_kv", [1, 2])
def test_grouped_query_attention(foo, heads_kv):
    q, k, v = qkv(heads_kv=heads_kv)
    assert torch._fused_sdp_choice(q.foo(), k.foo(), v.foo(), enable_gqa=True) == FUSED
    expected = forward_backward(q, k, v, is_causal=True, enable_gqa=True)
    got = forward_backward(q.foo(), k.foo(), v.foo(), is_causal=True, enable_gqa=True)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, **TOL[torch.float32])
    # Without enable_gqa, math broadcasts one key head and refuses two, as on CPU.
    try:
        expected = F.scaled_dot_product_attention(q, k, v)
    except RuntimeError as cpu_error:
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_error))):
            F.scaled_dot_product_attention(q.foo(), k.foo(), v.foo())
    else:
        torch.testing.assert_close(F.scaled_dot_product_attention(q.foo(), k.foo(), v.foo()).cpu(), expected)


@pytest.mark.parametrize("scale", [0.3, 2.0, -0.5])
def test_scale(foo, scale):
    q, k, v = qkv()
    expected = forward_backward(q, k, v, scale=scale)
    got = forward_backward(q.foo(), k.foo(), v.foo(), scale=scale)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, **TOL[torch.float32])


def test_layout_of_transformers_heads_is_kept(foo):
    # (B, L, H, E) projections viewed as (B, H, L, E), as transformers' models make them.
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(B, L, H, E, generator=g).transpose(1, 2) for _ in range(3))
    expected = forward_backward(q, k, v, is_causal=True)
    got = forward_backward(q.foo(), k.foo(), v.foo(), is_causal=True)
    for e, gt in zip(expected, got):
        assert gt.stride() == e.stride()
        torch.testing.assert_close(gt, e, **TOL[torch.float32])


def _choice_cases():
    q, k, v = qkv()
    gqa_k, gqa_v = k[:, :2], v[:, :2]
    return {
        "gqa": ((q, gqa_k, gqa_v), dict(enable_gqa=True)),
        "gqa_not_enabled": ((q, gqa_k, gqa_v), dict()),
        "gqa_indivisible": ((q, k[:, :3], v[:, :3]), dict(enable_gqa=True)),
        "dropout": ((q, k, v), dict(dropout_p=0.1)),
        "requires_grad": ((q.clone().requires_grad_(), k, v), dict()),
        "mask_requires_grad": ((q, k, v), dict(attn_mask=torch.zeros(L, S, requires_grad=True))),
        "mask_3d": ((q, k, v), dict(attn_mask=torch.zeros(1, L, S))),
        "mask_wrong_length": ((q, k, v), dict(attn_mask=torch.zeros(L, S + 1))),
        "three_d_inputs": ((q[0], k[0], v[0]), dict()),
        "dtype_mix": ((q.half(), k, v), dict()),
        "head_dims_differ": ((q, k, v[..., :8]), dict()),
        "last_dim_strided": ((q.transpose(-1, -2).contiguous().transpose(-1, -2), k, v), dict()),
        "empty_sequence": ((q[:, :, :0], k, v), dict()),
        "batch_differs": ((q, k[:1], v[:1]), dict()),
    }


@pytest.mark.parametrize("case", list(_choice_cases()))
def test_fused_exactly_where_cpu_takes_flash(foo, case):
    (q, k, v), kwargs = _choice_cases()[case]
    cpu = torch._fused_sdp_choice(q, k, v, **kwargs)
    on = torch._fused_sdp_choice(q.foo(), k.foo(), v.foo(), **on_foo(kwargs))
    # and with dropout, which foo's fused kernel does (as CUDA's) and CPU's does not
    assert on == (FUSED if cpu == FLASH or case == "dropout" else MATH)


def test_float64_takes_math_as_on_cuda(foo):
    q, k, v = (t.double().foo() for t in qkv())
    assert torch._fused_sdp_choice(q, k, v) == MATH
    expected = F.scaled_dot_product_attention(*(t.cpu() for t in (q, k, v)))
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v).cpu(), expected)


@pytest.mark.parametrize("backends,choice", [
    ([SDPBackend.OVERRIDEABLE], FUSED),
    ([SDPBackend.FLASH_ATTENTION], FUSED),  # code written for CUDA's flash kernel gets foo's
    ([SDPBackend.MATH], MATH),
    ([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH], MATH),
])
def test_sdpa_kernel_restricts_the_choice(foo, backends, choice):
    q, k, v = (t.foo() for t in qkv())
    with sdpa_kernel(backends):
        assert torch._fused_sdp_choice(q, k, v) == choice
        ops = ops_run(lambda: F.scaled_dot_product_attention(q, k, v))
    assert (FORWARD in ops) == (choice == FUSED)


def test_no_allowed_kernel_fails_as_on_cpu(foo):
    q, k, v = qkv()
    mask_3d = torch.zeros(1, L, S)  # which CPU's flash kernel does not take
    for backends in ([SDPBackend.EFFICIENT_ATTENTION], [SDPBackend.FLASH_ATTENTION]):
        with sdpa_kernel(backends):
            with pytest.raises(RuntimeError) as cpu_error:
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask_3d)
            with pytest.raises(RuntimeError, match=re.escape(str(cpu_error.value))):
                F.scaled_dot_product_attention(q.foo(), k.foo(), v.foo(), attn_mask=mask_3d.foo())


def test_queued_on_the_stream_not_a_host_wait(foo):
    q, k, v = qkv()
    qf, kf, vf = (t.foo().requires_grad_() for t in (q, k, v))
    with held_stream() as still_held:
        out = F.scaled_dot_product_attention(qf * 1.0, kf, vf, is_causal=True)
        out.backward(torch.linspace(-1, 1, out.numel(), device="foo").view(out.shape))
        assert still_held() and not foo.current_stream().query()  # neither call waited for the stream
    foo.synchronize()
    expected = forward_backward(q, k, v, is_causal=True)
    got = [out.detach().cpu(), qf.grad.cpu(), kf.grad.cpu(), vf.grad.cpu()]
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e)


def test_on_a_side_stream_in_its_order(foo):
    q, k, v = (t.foo() for t in qkv())
    s = foo.Stream()
    s.wait_stream(foo.current_stream())
    with held_stream(s) as still_held:
        with foo.stream(s):
            out = F.scaled_dot_product_attention(q, k, v)
            done = foo.Event()
            done.record()
        assert still_held() and not done.query()
    done.synchronize()
    torch.testing.assert_close(out.cpu(), F.scaled_dot_product_attention(q.cpu(), k.cpu(), v.cpu()))


def test_extra_memory_of_a_call_is_its_output(foo):
    # The math path would hold B*H*L*S floats of attention weights (16 MiB here).
    q, k, v = (torch.randn(1, 4, 1024, 64, device="foo") for _ in range(3))
    foo.synchronize()
    foo.reset_peak_memory_stats()
    before = foo.memory_allocated()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    foo.synchronize()
    assert foo.max_memory_allocated() - before <= 2 * out.numel() * out.element_size()


# --- errors, raised at the call ------------------------------------------------------------------


def _overrideable(q, k, v, bias=None, dropout_p=0.0, **kw):
    return torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, bias, dropout_p, **kw)


def _bad_calls():
    q, k, v = (t.foo() for t in qkv())
    # Every argument is made here: making one (k.cpu()) may wait for the stream.
    k_half, k_other, k_cpu, q64, k64, v64 = k.half(), k.to("foo:1"), k.cpu(), q.double(), k.double(), v.double()
    mask = {dtype: torch.zeros(L, S, dtype=dtype, device="foo") for dtype in (torch.int32, torch.bool)}
    mask_3d, mask_wide = torch.zeros(1, L, S, device="foo"), torch.zeros(L, S + 1, device="foo")
    q_int, k_int, v_int = q.long(), k.long(), v.long()
    torch.foo.synchronize()
    return {
        "dtypes_differ": (lambda: _overrideable(q, k_half, v), "same dtype"),
        "five_d": (lambda: _overrideable(q[None], k[None], v[None]), "Accept only 4 dims"),
        "dropout_above_1": (lambda: _overrideable(q, k, v, dropout_p=1.5), "between 0 and 1"),
        "head_sizes_differ": (lambda: _overrideable(q, k, v[..., :8]), "same head size"),
        "mask_3d": (lambda: _overrideable(q, k, v, mask_3d), r"dim in \{2, 4\}"),
        "mask_int": (lambda: _overrideable(q, k, v, mask[torch.int32]), "same data type as query"),
        "mask_bool": (lambda: _overrideable(q, k, v, mask[torch.bool]), "same data type as query"),
        "mask_wrong_shape": (lambda: _overrideable(q, k, v, mask_wide), "does not broadcast"),
        "heads_indivisible": (lambda: _overrideable(q, k[:, :3], v[:, :3]), "multiple of H_kv"),
        "kv_lengths_differ": (lambda: _overrideable(q, k, v[:, :, :7]), "key and value of one shape"),
        "empty_keys": (lambda: _overrideable(q, k[:, :, :0], v[:, :, :0]), "nonzero key sequence length"),
        "float64": (lambda: _overrideable(q64, k64, v64), "float64 attention takes the math"),
        "integer": (lambda: _overrideable(q_int, k_int, v_int), "Expected data type in FP32"),
        "other_device": (lambda: _overrideable(q, k_other, v), "foo:1"),
        "cpu_key": (lambda: _overrideable(q, k_cpu, v), "cpu"),
    }


@pytest.mark.parametrize("case", list(_bad_calls()))
def test_bad_input_raises_at_the_call(foo, case):
    call, message = _bad_calls()[case]
    with held_stream() as still_held:
        with pytest.raises(RuntimeError, match=message):
            call()
        assert still_held() and not foo.current_stream().query()  # raised without waiting for the stream
    foo.synchronize()  # and nothing was queued that fails later


def test_public_function_errors_match_cpu(foo):
    q, k, v = qkv()
    for kwargs in (dict(attn_mask=torch.zeros(S)), dict(attn_mask=torch.zeros(L, S), is_causal=False, dropout_p=2.0)):
        with pytest.raises(Exception) as cpu_error:
            F.scaled_dot_product_attention(q, k, v, **kwargs)
        with pytest.raises(type(cpu_error.value)):
            F.scaled_dot_product_attention(q.foo(), k.foo(), v.foo(), **on_foo(kwargs))


def test_backward_checks_its_saved_tensors(foo):
    q, k, v = (t.foo() for t in qkv())
    out, lse, *_rest = _overrideable(q, k, v)
    args = dict(attn_bias=None, grad_input_mask=[True, True, True, False], cum_seq_q=None, cum_seq_k=None,
                max_q=L, max_k=S, dropout_p=0.0, is_causal=False, philox_seed=_rest[4], philox_offset=_rest[5])
    backward = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward
    with pytest.raises(RuntimeError, match="logsumexp must be float32"):
        backward(out, q, k, v, out=out, logsumexp=lse[:, :, :-1], **args)
    with pytest.raises(RuntimeError, match="grad_out and out must have the query's sizes"):
        backward(out[:, :, :-1], q, k, v, out=out, logsumexp=lse, **args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("form", ["float_2d", "float_4d", "float_broadcast_1h1s", "causal_and_mask", "gqa"])
def test_a_mask_that_requires_grad_gets_its_gradient(foo, form, dtype):
    # As from CUDA's memory-efficient kernel: the fused operator called
    # directly, and the public function, give the mask CPU's gradient.
    gqa = form == "gqa"
    q, k, v = qkv(dtype, heads_kv=2 if gqa else H)
    kwargs = masks(dtype)["float_broadcast_b1ls" if gqa else form]
    mask, causal = kwargs["attn_mask"], kwargs.get("is_causal", False)
    grad = torch.linspace(-1, 1, q.numel()).view(q.shape).to(dtype)
    qc, kc, vc, mc = (t.clone().requires_grad_() for t in (q, k, v, mask))
    # The public function takes no mask with is_causal: the causal mask is added to it.
    future = torch.ones(L, S, dtype=torch.bool).triu(1)
    causal_mask = torch.zeros(L, S, dtype=dtype).masked_fill(future, float("-inf")) if causal else 0
    expected = F.scaled_dot_product_attention(qc, kc, vc, attn_mask=mc + causal_mask, enable_gqa=gqa)
    expected.backward(grad)
    for public in (False,) if causal else (False, True):
        qf, kf, vf, mf = (t.foo().requires_grad_() for t in (q, k, v, mask))
        if public:
            out = F.scaled_dot_product_attention(qf, kf, vf, attn_mask=mf, is_causal=causal, enable_gqa=gqa)
        else:
            out = _overrideable(qf, kf, vf, mf, is_causal=causal)[0]
        out.backward(grad.foo())
        assert mf.grad.shape == mask.shape
        for name, g, e in (("out", out, expected), ("grad_mask", mf.grad, mc.grad), ("grad_q", qf.grad, qc.grad)):
            torch.testing.assert_close(g.detach().cpu(), e.detach(), **TOL[dtype], msg=f"{name}, public={public}")


def test_mask_gradient_with_dropout_equals_math_with_the_same_dropout_mask(foo):
    q, k, v = qkv()
    mask = masks(torch.float32)["float_broadcast_1h1s"]["attn_mask"]
    qf, kf, vf, mf = (t.foo().requires_grad_() for t in (q, k, v, mask))
    out, _lse, *_, kept = _overrideable(qf, kf, vf, mf, 0.3, return_debug_mask=True)
    grad = torch.linspace(-1, 1, out.numel()).view(out.shape)
    out.backward(grad.foo())
    qc, kc, vc, mc = (t.clone().requires_grad_() for t in (q, k, v, mask))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dropout mask should only be used for testing")
        expected, _ = torch.ops.aten._scaled_dot_product_attention_math(qc, kc, vc, mc, 0.3, dropout_mask=kept.cpu())
    expected.backward(grad)
    torch.testing.assert_close(out.detach().cpu(), expected.detach(), **TOL[torch.float32])
    torch.testing.assert_close(mf.grad.cpu(), mc.grad, **TOL[torch.float32])


# --- dropout: foo's generator, seeded, fresh in every graph replay -------------------------------


def _uniform_attention(p):
    """Attention weights all 1/S over an identity value: each output element is
    the dropout mask of one weight, scaled: 0 or 1 / (S (1 - p))."""
    q = torch.zeros(1, 2, 256, 64, device="foo")
    v = torch.eye(64, device="foo").expand(1, 2, 64, 64)
    return F.scaled_dot_product_attention(q, q[:, :, :64], v, dropout_p=p)


def test_dropout_statistics(foo):
    p = 0.3
    out = _uniform_attention(p).cpu()
    dropped = out == 0
    assert abs(dropped.float().mean().item() - p) < 0.03
    torch.testing.assert_close(out[~dropped], torch.full_like(out[~dropped], 1 / (64 * (1 - p))))


def test_dropout_follows_the_seed(foo):
    torch.manual_seed(5)
    first = _uniform_attention(0.5).cpu()
    torch.manual_seed(5)
    assert torch.equal(_uniform_attention(0.5).cpu(), first)
    torch.manual_seed(6)
    assert not torch.equal(_uniform_attention(0.5).cpu(), first)


def test_dropout_in_a_graph_is_fresh_each_replay_and_matches_eager(foo):
    out = torch.empty(1, 2, 256, 64, device="foo")
    _uniform_attention(0.5)  # warm up outside the capture
    g = foo.FooGraph()
    with foo.graph(g):
        out.copy_(_uniform_attention(0.5))
    foo.manual_seed(11)
    replays = []
    for _ in range(2):
        g.replay()
        replays.append(out.cpu())
    assert not torch.equal(replays[0], replays[1])
    foo.manual_seed(11)
    assert torch.equal(_uniform_attention(0.5).cpu(), replays[0])
    assert torch.equal(_uniform_attention(0.5).cpu(), replays[1])


def test_dropout_gradients_see_the_same_mask(foo):
    # One query row, weights 1/S, v the identity: out[j] = Z_j / (S (1 - p))
    # for the row's dropout mask Z, and d(out.sum())/dv[j, e] = the same.
    q = torch.zeros(1, 1, 1, 64, device="foo")
    k = torch.zeros(1, 1, 64, 64, device="foo")
    v = torch.eye(64, device="foo")[None, None].requires_grad_()
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    out.sum().backward()
    torch.testing.assert_close(v.grad[0, 0].cpu(), out[0, 0, 0, :, None].detach().cpu().expand(64, 64))


def _float_mask(kwargs, dtype):
    """The composite's conversion of a bool mask: -inf where not kept."""
    mask = kwargs.get("attn_mask")
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, float("-inf"))
    return mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", ["none", "causal", "bool_padding_b11s", "float_4d", "float_broadcast_1s", "gqa"])
def test_dropout_equals_math_with_the_same_dropout_mask(foo, form, dtype):
    # The fused kernel's dropout mask (return_debug_mask) given to CPU's math
    # kernel, as PyTorch's own tests check fused kernels: forward and gradients.
    gqa = form == "gqa"
    q, k, v = qkv(dtype, heads_kv=2 if gqa else H)
    kwargs = {} if gqa else masks(dtype)[form]
    mask, causal, p = _float_mask(kwargs, dtype), kwargs.get("is_causal", False), 0.3
    qf, kf, vf = (t.foo().requires_grad_() for t in (q, k, v))
    out, _lse, *_, kept = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        qf, kf, vf, None if mask is None else mask.foo(), p, causal, return_debug_mask=True)
    grad = torch.linspace(-1, 1, out.numel()).view(out.shape).to(dtype)
    out.backward(grad.foo())
    assert kept.dtype == torch.bool and kept.shape == (B, H, L, S)
    assert abs((~kept).float().mean().item() - p) < 0.05 or causal
    qc, kc, vc = (t.clone().requires_grad_() for t in (q, k, v))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dropout mask should only be used for testing")
        expected, _ = torch.ops.aten._scaled_dot_product_attention_math(
            qc, kc, vc, mask, p, causal, dropout_mask=kept.cpu(), enable_gqa=gqa)
    expected.backward(grad)
    for name, g, e in (("out", out, expected), ("grad_q", qf.grad, qc.grad), ("grad_k", kf.grad, kc.grad),
                       ("grad_v", vf.grad, vc.grad)):
        torch.testing.assert_close(g.detach().cpu(), e.detach(), **TOL[dtype], msg=name)


def test_dropout_takes_the_fused_kernel(foo):
    q, k, v = (t.foo().requires_grad_() for t in qkv())
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.1) == FUSED
    ops = ops_run(lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1).sum().backward())
    assert FORWARD in ops and BACKWARD in ops and "aten::native_dropout" not in ops


# --- graphs and torch.compile --------------------------------------------------------------------


def test_graph_replay_reads_new_inputs(foo):
    q, k, v = (torch.zeros(B, H, L, E, device="foo") for _ in range(3))
    F.scaled_dot_product_attention(q, k, v, is_causal=True)  # warm up outside the capture
    g = foo.FooGraph()
    with foo.graph(g):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for seed in range(2):
        fresh = qkv(l=L, s=L, seed=seed)
        for t, f in zip((q, k, v), fresh):
            t.copy_(f)
        g.replay()
        torch.testing.assert_close(out.cpu(), F.scaled_dot_product_attention(*fresh, is_causal=True))


@pytest.fixture
def inductor(tmp_path, monkeypatch):
    import torch._dynamo
    import torch._inductor.config

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setattr(torch._inductor.config, "compile_threads", 1)
    torch._dynamo.reset()
    yield
    torch.foo.synchronize()
    torch._dynamo.reset()


@pytest.mark.slow  # inductor's C++ compile
def test_compiled_attention_runs_the_fused_kernel(foo, inductor):
    def block(q, k, v, mask):
        return F.scaled_dot_product_attention(q.sin(), k, v, attn_mask=mask).relu()

    q, k, v = qkv()
    mask = torch.randn(B, 1, L, S)
    qc, kc, vc = (t.foo().requires_grad_() for t in (q, k, v))
    qe, ke, ve = (t.foo().requires_grad_() for t in (q, k, v))
    compiled = torch.compile(block)
    ops = ops_run(lambda: compiled(qc, kc, vc, mask.foo()).sum().backward())
    assert FORWARD in ops and BACKWARD in ops
    block(qe, ke, ve, mask.foo()).sum().backward()
    for c, e in ((qc, qe), (kc, ke), (vc, ve)):
        torch.testing.assert_close(c.grad.cpu(), e.grad.cpu())
    torch.testing.assert_close(compiled(qc, kc, vc, mask.foo()).cpu(), block(qe, ke, ve, mask.foo()).cpu())


def test_compiled_attention_with_dropout(foo, inductor):
    # As test_dropout_gradients_see_the_same_mask, compiled: the backward
    # regenerates the forward's dropout mask.
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    q = torch.zeros(1, 1, 1, 64, device="foo")
    k = torch.zeros(1, 1, 64, 64, device="foo")
    v = torch.eye(64, device="foo")[None, None].requires_grad_()
    compiled = torch.compile(f)
    ops = ops_run(lambda: compiled(q, k, v))
    assert FORWARD in ops
    out = compiled(q, k, v)
    out.sum().backward()
    dropped = (out == 0).float().mean().item()
    assert 0.25 < dropped < 0.75
    torch.testing.assert_close(v.grad[0, 0].cpu(), out[0, 0, 0, :, None].detach().cpu().expand(64, 64))


# --- the race detector sees the kernel's accesses ------------------------------------------------


def test_race_detector_sees_an_unordered_read(foo):
    import torch_foo

    q, k, v = (t.foo() for t in qkv())
    s = foo.Stream()
    foo.synchronize()
    foo.clear_race_reports()
    try:
        with foo.race_check("raise"):
            k.mul_(2)
            with foo.stream(s):
                with pytest.raises(torch_foo.RaceError, match=FORWARD):
                    F.scaled_dot_product_attention(q, k, v)
    finally:
        foo.synchronize()
        foo.set_race_check("off")
        foo.clear_race_reports()

"""PyTorch's OpInfo database as the reference: every operator, every float32
sample input, forward and (where the OpInfo supports autograd) backward, on
foo equals CPU within the tolerances PyTorch's own tests use.

The other dtypes users run (float64, float16, bfloat16, int64, bool,
complex64) are swept with the first few samples of each operator, and each
dtype is held to CUDA's coverage, which OpInfo lists beside CPU's: where both
take the dtype, foo equals CPU; where only CPU does, foo raises as CUDA does;
where only CUDA does, foo equals CPU computed in a wider dtype.

One test per OpInfo, so pytest-xdist spreads them. The summary line of the
run reports the pass rate (see conftest.py). Operators left out are listed
in EXCLUDED with the reason.
"""
import itertools

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import set_rng_seed

import torch_foo  # noqa: F401  (already autoloaded; explicit for readers)

# Operators whose values cannot match CPU by design.
RANDOM = "random: foo draws from its own generator (as CUDA does), so values differ from CPU's"
EXCLUDED = {
    name: RANDOM
    for name in (
        "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
        "normal.number_mean", "normal.in_place", "uniform", "rand_like", "randn_like", "randint_like",
        "randint", "randn", "rand", "randperm", "nn.functional.dropout", "nn.functional.dropout2d",
        "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout.with_train",
        "nn.functional.feature_alpha_dropout.without_train", "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d", "poisson", "random", "random.from", "random.to",
        "nn.functional.multi_head_attention_forward", "nn.functional.scaled_dot_product_attention",
    )
}
EXCLUDED.update({
    name: "a CUDA jiterator operator: implemented only for CUDA"
    for name in ("jiterator_unary", "jiterator_binary", "jiterator_binary_return_by_ref", "jiterator_2inputs_2outputs",
                 "jiterator_4inputs_with_extra_args")
})
EXCLUDED.update({
    "svd_lowrank": RANDOM, "pca_lowrank": RANDOM,
    "as_strided.partial_views": "reaches outside the input view into its base's storage, which moving the "
                                "sample to foo does not carry over",
    "linalg.lstsq": "its default driver depends on the device (gelsy on CPU, gels elsewhere, as on CUDA)",
    "linalg.lstsq.grad_oriented": "its default driver depends on the device (gelsy on CPU, gels elsewhere)",
    "tensor_split": "takes its indices tensor on the CPU only, as on CUDA (the sweep moves every tensor); "
                    "covered by test_compute.py",
    # Outputs that are uninitialized memory: there is nothing to compare.
    "empty": "returns uninitialized memory", "empty_like": "returns uninitialized memory",
    "new_empty": "returns uninitialized memory", "new_empty_strided": "returns uninitialized memory",
    "empty_strided": "returns uninitialized memory", "empty_permuted": "returns uninitialized memory",
    "nn.functional.dropout.nondeterministic": RANDOM,
    "nn.functional.batch_norm.without_cudnn": "a CUDA-only variant (cuDNN switched off) of "
                                              "nn.functional.batch_norm, which is swept itself",
})


def _full_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


OPS = [op for op in op_db]

# The quick run (``-m "not slow"``) sweeps these only: one operator of each
# kind of kernel (elementwise, reduction, scan, sort, matmul, convolution,
# pooling, indexing, FFT, norm, view).
QUICK_OPS = {"add", "mul", "where", "sum", "var_mean", "cumsum", "sort", "matmul", "nn.functional.conv2d",
             "nn.functional.max_pool2d", "index_select", "index_put", "fft.fft", "linalg.vector_norm", "transpose"}


def _swept(params):
    """``params`` for parametrize, each marked slow unless its operator is in QUICK_OPS."""
    return [pytest.param(*p, id="-".join(_full_name(v) if hasattr(v, "name") else str(v)[6:] for v in p),
                         marks=() if _full_name(p[0]) in QUICK_OPS else pytest.mark.slow) for p in params]

# Functions that create tensors; called without tensors or a device, their
# samples are created on foo for the comparison.
FACTORIES = {"arange", "linspace", "logspace", "full", "ones", "zeros", "eye", "scalar_tensor", "empty"}


def _to(device: str):
    def move(t):
        if isinstance(t, torch.Tensor):
            return t.detach().to(device).requires_grad_(t.requires_grad)
        return t
    return move


def _foo_devices(value):
    """Device arguments of a sample (factories, .to) made to name foo."""
    if isinstance(value, torch.device) and value.type == "cpu" or value == "cpu":
        return torch.device("foo")
    if isinstance(value, (list, tuple)):
        return type(value)(_foo_devices(v) for v in value)
    return value


def _flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flatten(v)]
    return []


def _inputs(sample):
    return [t for t in _flatten([sample.input, list(sample.args), list(sample.kwargs.values())]) if t.requires_grad]


def _compare(got, want, what):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{what}: expected a tensor, got {type(got)}"
        assert got.device.type == "foo", f"{what}: result on {got.device}, not on foo"
        torch.testing.assert_close(got.cpu(), want, equal_nan=True, msg=lambda m: f"{what}: {m}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{what}[{i}]")
    else:
        assert got == want or (got != got and want != want), f"{what}: {got!r} != {want!r}"


def _foo_sample(sample, op):
    foo = sample.transform(_to("foo"))
    foo.args = _foo_devices(foo.args)
    foo.kwargs = {k: _foo_devices(v) for k, v in foo.kwargs.items()}
    if (op.name in FACTORIES and "device" not in foo.kwargs
            and not _flatten([foo.input, list(foo.args), list(foo.kwargs.values())])):
        foo.kwargs["device"] = "foo"  # a factory called without tensors: create on foo
    return foo


# Outputs CUDA's kernels return in their accumulation type (float for half
# and bfloat16 input) where CPU's return the input's dtype: the saved
# statistics of batch and layer norm. foo returns CUDA's dtypes; the CPU
# values are compared after the same widening.
SAVED_STATISTICS = {name: (1, 2) for name in (
    "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update", "native_layer_norm")}


def _as_cuda_returns(name, want):
    if name not in SAVED_STATISTICS:
        return want
    return tuple(w.float() if i in SAVED_STATISTICS[name] and w.dtype in (torch.float16, torch.bfloat16) else w
                 for i, w in enumerate(want))


def _check_sample(op, name, sample, grad):
    """Forward and, with ``grad``, backward of one sample: foo equals CPU."""
    cpu, foo = sample.transform(_to("cpu")), _foo_sample(sample, op)
    want = op(cpu.input, *cpu.args, **cpu.kwargs)
    got = op(foo.input, *foo.args, **foo.kwargs)
    _compare(got, _as_cuda_returns(_full_name(op), want), f"{name} forward")
    if not grad:
        return
    want_out = [t for t in _flatten(sample.output_process_fn_grad(want)) if t.requires_grad]
    got_out = [t for t in _flatten(sample.output_process_fn_grad(got)) if t.requires_grad]
    cpu_in, foo_in = _inputs(cpu), _inputs(foo)
    if not want_out or not cpu_in:
        return
    grads_out = [torch.randn_like(t) for t in want_out]
    want_grads = torch.autograd.grad(want_out, cpu_in, grads_out, allow_unused=True)
    got_grads = torch.autograd.grad(got_out, foo_in, [g.to("foo") for g in grads_out], allow_unused=True)
    for j, (g, w) in enumerate(zip(got_grads, want_grads)):
        if w is not None:
            _compare(g, w, f"{name} grad of input {j}")


def _skip_if_excluded(name, op):
    if name in EXCLUDED or op.name in EXCLUDED:
        pytest.skip(EXCLUDED.get(name) or EXCLUDED[op.name])


def _sample_inputs(op, dtype, requires_grad=False):
    """The samples ``op.sample_inputs("cpu", dtype, requires_grad)`` gives, without its iterator,
    whose constructor walks the caller's stack (``inspect.stack()``: seconds per operator under
    pytest); as that iterator does, the seed is reset before each sample is drawn."""
    samples = iter(op.sample_inputs_func(op, "cpu", dtype, requires_grad))
    while True:
        set_rng_seed()
        sample = next(samples, None)
        if sample is None:
            return
        yield sample


@pytest.mark.parametrize("op", _swept((op,) for op in OPS))
def test_op_matches_cpu(op):
    name = _full_name(op)
    _skip_if_excluded(name, op)
    if torch.float32 not in op.supported_dtypes("cpu"):
        pytest.skip("no float32 on CPU")
    if torch.float32 not in _cuda_dtypes(op):
        return _expect_cuda_error(op, name, torch.float32)
    for i, sample in enumerate(_sample_inputs(op, torch.float32, requires_grad=op.supports_autograd)):
        _check_sample(op, f"{name} sample {i}", sample, op.supports_autograd)


# ---------------------------------------------------------------- other dtypes

OTHER_DTYPES = (torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.complex64)
SAMPLES_PER_OTHER_DTYPE = 2

# OpInfo's CUDA dtypes that depend on the GPU found at import: on a machine
# without one, PyTorch's tables leave out bfloat16 matmul (which needs
# sm_53 or later), although CUDA has it. foo takes it.
CUDA_DTYPES_HIDDEN_WITHOUT_A_GPU = {
    name: {torch.bfloat16} for name in ("bmm", "matmul", "addbmm", "nn.functional.bilinear", "__rmatmul__")
}

# Dtypes where foo does not yet follow CUDA or cannot equal CPU, and why.
CUDA_DTYPE_DIFFERENCES = {
    **{(f"nn.functional.linear_cross_entropy.{variant}", dtype):
       "picks its algorithm by device type: fp32 accumulation ('accurate') on CPU, reduced-precision "
       "('compact') on CUDA and every other device, foo included, so half gradients differ from CPU's by design"
       for variant in ("chunked", "chunked_none") for dtype in (torch.float16, torch.bfloat16)},
    ("scatter_reduce.prod", torch.bool): "CUDA refuses bool for prod/amin/amax reductions; foo computes them as CPU",
    ("scatter_reduce.amin", torch.bool): "CUDA refuses bool for prod/amin/amax reductions; foo computes them as CPU",
    ("scatter_reduce.amax", torch.bool): "CUDA refuses bool for prod/amin/amax reductions; foo computes them as CPU",
    ("norm", torch.complex32): "CUDA refuses complex32 norms; foo computes them as CPU",
    ("norm.inf", torch.complex32): "CUDA refuses complex32 norms; foo computes them as CPU",
    ("nansum", torch.complex64): "complex nansum/nanmean (CUDA only) are not implemented on foo",
    ("nansum", torch.complex128): "complex nansum/nanmean (CUDA only) are not implemented on foo",
    ("nansum", torch.complex32): "complex nansum/nanmean (CUDA only) are not implemented on foo",
    ("nanmean", torch.complex64): "complex nansum/nanmean (CUDA only) are not implemented on foo",
    ("nanmean", torch.complex128): "complex nansum/nanmean (CUDA only) are not implemented on foo",
    ("nanmean", torch.complex32): "complex nansum/nanmean (CUDA only) are not implemented on foo",
    ("nn.functional.rrelu", torch.float16): RANDOM,
    ("torch.ops.aten._flash_attention_forward", torch.float16): "a fused CUDA attention kernel, not an operator "
                                                                 "foo implements",
    ("torch.ops.aten._efficient_attention_forward", torch.float16): "a fused CUDA attention kernel",
    ("torch.ops.aten._efficient_attention_forward", torch.float32): "a fused CUDA attention kernel",
    ("diag", torch.complex32): "complex32 diag needs a complex32 copy kernel, which CPU lacks",
}
CUDA_DTYPE_DIFFERENCES.update({
    (f"fft.{kind}", dtype): "half and complex32 FFTs (cuFFT, power-of-two sizes only) are not implemented on foo"
    for kind in ("fft", "fft2", "fftn", "hfft", "hfft2", "hfftn", "rfft", "rfft2", "rfftn", "ifft", "ifft2", "ifftn",
                 "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn")
    for dtype in (torch.float16, torch.complex32)
})

# CPU computes the reference for a dtype only CUDA takes in this one.
WIDER = {torch.complex32: torch.complex64, torch.float16: torch.float32, torch.bfloat16: torch.float32,
         torch.bool: torch.int64, torch.uint8: torch.float64, torch.int8: torch.float64, torch.int16: torch.float64,
         torch.int32: torch.float64, torch.int64: torch.float64}


def _cuda_dtypes(op):
    return set(op.supported_dtypes("cuda")) | CUDA_DTYPES_HIDDEN_WITHOUT_A_GPU.get(_full_name(op), set())


def _samples(op, dtype, grad=False):
    return itertools.islice(_sample_inputs(op, dtype, requires_grad=grad), SAMPLES_PER_OTHER_DTYPE)


SAMPLES_WHERE_CUDA_REFUSES = 6


def _expect_cuda_error(op, name, dtype):
    """A dtype CPU takes and CUDA does not: foo raises CUDA's error, except
    for samples an operator computes without the kernel CUDA lacks (einsum
    without a contraction, say), which equal CPU."""
    raised = 0
    for i, sample in enumerate(itertools.islice(_sample_inputs(op, dtype), SAMPLES_WHERE_CUDA_REFUSES)):
        try:
            _check_sample(op, f"{name} {dtype} sample {i}", sample, grad=False)
            torch.foo.synchronize()  # an error raised on the stream would surface here
        except (RuntimeError, NotImplementedError) as e:
            assert "on foo, as on CUDA" in str(e) or "not implemented for" in str(e), f"{name} {dtype}: {e}"
            raised += 1
    assert raised, f"{name} in {dtype}: foo computed every sample, CUDA has no kernel for it"


def _decomposed_above_the_backend(name, dtype):
    """A complex32 convolution never reaches a backend whole: ATen's composite _convolution splits it into three
    half convolutions (Gauss's trick) with half intermediates, on CUDA as on CPU and foo, so CPU itself computes
    it, and the whole operator computed in complex64 is not what CUDA returns (cancellation in the half
    intermediates: several percent on small elements)."""
    return dtype == torch.complex32 and name.startswith("nn.functional.conv")


def _check_widened(op, name, dtype):
    """A dtype CUDA takes and CPU does not: foo equals CPU in a wider dtype, cast back."""
    wider = WIDER[dtype]
    widen = lambda t: t.to(wider) if isinstance(t, torch.Tensor) and t.dtype == dtype else t  # noqa: E731
    for i, sample in enumerate(_samples(op, dtype)):
        foo = _foo_sample(sample, op)
        got = op(foo.input, *foo.args, **foo.kwargs)
        cpu = sample if _decomposed_above_the_backend(name, dtype) else sample.transform(widen)
        want = op(cpu.input, *cpu.args, **cpu.kwargs)
        for j, (g, w) in enumerate(zip(_flatten(got), _flatten(want))):
            assert g.device.type == "foo", f"{name} {dtype} sample {i}: result on {g.device}"
            ref = w.to(g.dtype)
            tol = {} if g.dtype not in (torch.complex32, torch.float16, torch.bfloat16) else {"rtol": 2e-2, "atol": 2e-2}
            torch.testing.assert_close(g.cpu().to(wider if g.dtype == dtype else g.dtype),
                                       ref.to(wider if g.dtype == dtype else g.dtype), equal_nan=True, **tol,
                                       msg=lambda m: f"{name} {dtype} sample {i} result {j}: {m}")


@pytest.mark.parametrize("op", _swept((op,) for op in OPS))
def test_op_follows_cuda_in_other_dtypes(op):
    name = _full_name(op)
    _skip_if_excluded(name, op)
    cpu_dtypes, cuda_dtypes = set(op.supported_dtypes("cpu")), _cuda_dtypes(op)
    checked = 0
    for dtype in OTHER_DTYPES:
        if (name, dtype) in CUDA_DTYPE_DIFFERENCES:
            continue
        if dtype in cpu_dtypes and dtype in cuda_dtypes:
            grad = (op.supports_autograd and (dtype.is_floating_point or dtype.is_complex)
                    and dtype in op.supported_backward_dtypes("cpu"))
            for i, sample in enumerate(_samples(op, dtype, grad)):
                _check_sample(op, f"{name} {dtype} sample {i}", sample, grad)
        elif dtype in cpu_dtypes:
            _expect_cuda_error(op, name, dtype)
        elif dtype in cuda_dtypes:
            _check_widened(op, name, dtype)
        else:
            continue
        checked += 1
    if not checked:
        pytest.skip("none of the swept dtypes is supported")


CUDA_ONLY = [(op, dtype) for op in OPS for dtype in sorted(_cuda_dtypes(op) - set(op.supported_dtypes("cpu")), key=str)
             if dtype not in OTHER_DTYPES]


@pytest.mark.parametrize("op,dtype", _swept(CUDA_ONLY))
def test_cuda_only_dtype_matches_wider_cpu(op, dtype):
    """complex32 and small integer types, which the sweep above leaves out."""
    name = _full_name(op)
    _skip_if_excluded(name, op)
    if (name, dtype) in CUDA_DTYPE_DIFFERENCES:
        pytest.skip(CUDA_DTYPE_DIFFERENCES[(name, dtype)])
    _check_widened(op, name, dtype)

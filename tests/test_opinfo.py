"""PyTorch's OpInfo database as the reference: every operator, every float32
sample input, forward and (where the OpInfo supports autograd) backward, on
foo equals CPU within the tolerances PyTorch's own tests use.

One test per OpInfo, so pytest-xdist spreads them. The summary line of the
run reports the pass rate (see conftest.py). Operators left out are listed
in EXCLUDED with the reason.
"""

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

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
    name: "sparse layouts are not supported on foo" for name in ("to_sparse", "sparse.mm.reduce", "sparse.sampled_addmm")
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
})


def _full_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


OPS = [op for op in op_db]
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


@pytest.mark.parametrize("op", OPS, ids=_full_name)
def test_op_matches_cpu(op):
    name = _full_name(op)
    if name in EXCLUDED or op.name in EXCLUDED:
        pytest.skip(EXCLUDED.get(name) or EXCLUDED[op.name])
    if torch.float32 not in op.supported_dtypes("cpu"):
        pytest.skip("no float32 on CPU")
    grad = op.supports_autograd
    torch.manual_seed(0)
    for i, sample in enumerate(op.sample_inputs("cpu", torch.float32, requires_grad=grad)):
        cpu, foo = sample.transform(_to("cpu")), sample.transform(_to("foo"))
        foo.args = _foo_devices(foo.args)
        foo.kwargs = {k: _foo_devices(v) for k, v in foo.kwargs.items()}
        if (op.name in FACTORIES and "device" not in foo.kwargs
                and not _flatten([foo.input, list(foo.args), list(foo.kwargs.values())])):
            foo.kwargs["device"] = "foo"  # a factory called without tensors: create on foo
        want = op(cpu.input, *cpu.args, **cpu.kwargs)
        got = op(foo.input, *foo.args, **foo.kwargs)
        _compare(got, want, f"{name} sample {i} forward")
        if not grad:
            continue
        want_out = [t for t in _flatten(sample.output_process_fn_grad(want)) if t.requires_grad]
        got_out = [t for t in _flatten(sample.output_process_fn_grad(got)) if t.requires_grad]
        cpu_in, foo_in = _inputs(cpu), _inputs(foo)
        if not want_out or not cpu_in:
            continue
        grads_out = [torch.randn_like(t) for t in want_out]
        want_grads = torch.autograd.grad(want_out, cpu_in, grads_out, allow_unused=True)
        got_grads = torch.autograd.grad(got_out, foo_in, [g.to("foo") for g in grads_out], allow_unused=True)
        for j, (g, w) in enumerate(zip(got_grads, want_grads)):
            if w is None:
                continue
            _compare(g, w, f"{name} sample {i} grad of input {j}")

"""What CUDA's host code checks before it launches raises at the call on foo,
with the exception type and message CPU uses: every OpInfo's error inputs,
run as upstream's test_ops.py::test_errors runs them on a GPU (the call
alone, no synchronization), and the repros of errors that only a kernel
can find, which keep CPU's exception type when a synchronization reports
them."""

import re

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

# Cases foo cannot raise at the call, each with why. CUDA has no kernel for
# these dtypes, so foo refuses the call before the operator's checks.
NOT_AT_THE_CALL = {
    ("histogramdd", 0): "CUDA has no histogramdd kernel: foo refuses Float before the bins check",
}

# Cases foo still raises late (at the next synchronization) or not at all:
# their CPU kernels make the check inside a function that also runs the
# loop (CUDA has a function of its own), so foo's kernel makes it on the
# stream. Issue 36 lists them; each is to go.
STILL_LATE = {
    ("kthvalue", 0): "kthvalue_out_cpu: out= overlap",
    ("masked_fill", 1): "masked_fill__cpu: value conversion",
    ("masked_scatter", 1): "masked_scatter__cpu: mask dtype",
    ("masked_select", 0): "masked_select_out_cpu: out= overlap",
    ("masked_select", 1): "masked_select_out_cpu: out= overlap",
    ("masked_select", 2): "masked_select_out_cpu: out= overlap",
    ("aminmax", 3): "aminmax.out: two outputs, through the fallback",
    ("native_layer_norm", 0): "layer_norm_cpu: normalized_shape",
    ("nn.functional.gelu", 0): "gelu_out_cpu: approximate",
    ("index_select", 0): "index_select_out_cpu_: out= overlap",
    ("bucketize", 0): "bucketize_cpu: boundaries' dimension",
    ("logcumsumexp", 0): "_logcumsumexp_cpu: dim",
    ("logcumsumexp", 1): "_logcumsumexp_cpu: dim",
}


def _cases():
    for op in op_db:
        if op.error_inputs_func is None:
            continue
        name = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
        yield pytest.param(op, id=name)


def _error_inputs(op, device):
    # The generator itself: OpInfo.error_inputs wraps it in an iterator that
    # walks the whole call stack (inspect.stack, with source lines) to find a
    # unittest test to record the inputs on, which under pytest costs tenths
    # of a second per operator and nothing else here.
    return op.error_inputs_func(op, device)


def _call(op, error_input):
    s = error_input.sample_input
    return op(s.input, *s.args, **s.kwargs)


@pytest.mark.parametrize("op", list(_cases()))
def test_error_inputs_raise_at_the_call(foo, op):
    # Each case as CPU raises it (a case CPU itself does not raise is not
    # foo's to raise either), then on foo; a synchronization after each case
    # shows whether a kernel it queued failed instead.
    expected = list(_error_inputs(op, "cpu"))
    cpu_raises = []
    for e in expected:
        try:
            _call(op, e)
            cpu_raises.append(False)
        except e.error_type as exc:
            cpu_raises.append(re.search(e.error_regex, str(exc)) is not None)
        except Exception:
            cpu_raises.append(False)
    failures = []
    for i, e in enumerate(_error_inputs(op, "foo")):
        if i >= len(cpu_raises) or not cpu_raises[i] or (op.name, i) in NOT_AT_THE_CALL or (op.name, i) in STILL_LATE:
            continue
        try:
            _call(op, e)
            failures.append(f"case {i}: did not raise {e.error_type.__name__} at the call")
        except e.error_type as exc:
            if not re.search(e.error_regex, str(exc)):
                failures.append(f"case {i}: {type(exc).__name__} {str(exc)[:120]!r} does not match {e.error_regex!r}")
        except Exception as exc:
            failures.append(f"case {i}: raised {type(exc).__name__} {str(exc)[:120]!r}, not {e.error_type.__name__}")
        try:
            foo.synchronize()
        except Exception as exc:  # the call queued a kernel that failed: a late error
            failures.append(f"case {i}: a kernel failed later: {str(exc)[:120]!r}")
    assert not failures, "\n".join(failures)


# Each makes its inputs, then returns the call (a copy from the host waits
# for the stream, so inputs are made before the stream is held busy).
_REPROS = {
    "index_fill_ complex value": (RuntimeError, lambda d: (
        lambda x, i: lambda: x.index_fill_(0, i, 1j))(torch.zeros(3, device=d), torch.tensor([0], device=d))),
    "random_ out of the dtype's range": (RuntimeError, lambda d: (
        lambda x: lambda: x.random_(0, 200))(torch.empty(5, dtype=torch.int8, device=d))),
}

# The issue's repros foo still raises late, with CPU's exception type.
_REPROS_STILL_LATE = {
    # _index_put_impl_'s host code reaches a stub foo has no CPU kernel for.
    "index shapes do not broadcast": (IndexError, lambda d: (
        lambda x, i, j: lambda: x.__setitem__((i, j), 0))(torch.zeros(5, 5, device=d), torch.tensor([0, 1], device=d),
                                                           torch.tensor([0, 1, 2], device=d))),
    "median of an empty dimension": (IndexError, lambda d: (
        lambda x: lambda: torch.median(x, dim=1))(torch.zeros(2, 0, 4, device=d))),
}


@pytest.mark.parametrize("case", list(_REPROS))
def test_issue_repros_raise_at_the_call(foo, case):
    error_type, make = _REPROS[case]
    with pytest.raises(error_type) as on_cpu:
        make("cpu")()
    call = make("foo")
    foo._sleep(50)
    with pytest.raises(error_type) as on_foo:
        call()
    assert not foo.current_stream().query()  # raised by the call, not a wait
    assert str(on_foo.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]
    foo.synchronize()


@pytest.mark.parametrize("case", list(_REPROS_STILL_LATE))
def test_issue_repros_still_late_keep_cpus_exception_type(foo, case):
    error_type, make = _REPROS_STILL_LATE[case]
    with pytest.raises(error_type) as on_cpu:
        make("cpu")()
    make("foo")()
    with pytest.raises(error_type) as on_foo:
        foo.synchronize()
    assert str(on_cpu.value).splitlines()[0] in str(on_foo.value)


def test_an_error_only_the_kernel_finds_keeps_cpus_type(foo):
    # An index out of range is found by the kernel, so by the next
    # synchronization; it is still an IndexError, naming the operator.
    x = torch.zeros(3, device="foo")
    with pytest.raises(IndexError, match="index out of range") as on_cpu:
        torch.zeros(3).index_select(0, torch.tensor([7]))
    x.index_select(0, torch.tensor([7], device="foo"))
    with pytest.raises(IndexError) as on_foo:
        foo.synchronize()
    assert "aten::index_select" in str(on_foo.value)
    assert str(on_cpu.value).splitlines()[0] in str(on_foo.value)
    foo.synchronize()  # reported once: the device is clean

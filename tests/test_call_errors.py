"""What CUDA's host code checks before it launches raises at the call on foo,
with the exception type and message CPU uses: every OpInfo's error inputs,
run as upstream's test_ops.py::test_errors runs them on a GPU (the call
alone, no synchronization), and issue 36's repros; an error only a kernel
can find keeps CPU's exception type when a synchronization reports it."""

import re

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

# Cases foo cannot raise at the call, each with why. CUDA has no kernel for
# these dtypes, so foo refuses the call before the operator's checks.
NOT_AT_THE_CALL = {
    ("histogramdd", 0): "CUDA has no histogramdd kernel: foo refuses Float before the bins check",
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
        if i >= len(cpu_raises) or not cpu_raises[i] or (op.name, i) in NOT_AT_THE_CALL:
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
    "index shapes do not broadcast": (IndexError, lambda d: (
        lambda x, i, j: lambda: x.__setitem__((i, j), 0))(torch.zeros(5, 5, device=d), torch.tensor([0, 1], device=d),
                                                           torch.tensor([0, 1, 2], device=d))),
    # The accumulating form, which ATen's host code hands on a GPU to a
    # kernel of its own (index_put_with_sort_stub).
    "accumulated index shapes do not broadcast": (IndexError, lambda d: (
        lambda x, i, j, v: lambda: x.index_put_((i, j), v, accumulate=True))(
            torch.zeros(5, 5, device=d), torch.tensor([0, 1], device=d), torch.tensor([0, 1, 2], device=d),
            torch.ones(3, device=d))),
    "accumulated value of another dtype": (RuntimeError, lambda d: (
        lambda x, i, v: lambda: x.index_put_((i,), v, accumulate=True))(
            torch.zeros(5, device=d), torch.tensor([0, 1], device=d), torch.ones(2, dtype=torch.float64, device=d))),
    "accumulated value that does not broadcast to an unindexed tensor": (RuntimeError, lambda d: (
        lambda x, v: lambda: x.index_put_((), v, accumulate=True))(torch.rand([], device=d), torch.ones(1, device=d))),
    "median of an empty dimension": (IndexError, lambda d: (
        lambda x: lambda: torch.median(x, dim=1))(torch.zeros(2, 0, 4, device=d))),
    "kthvalue's k beyond the dimension": (RuntimeError, lambda d: (
        lambda x: lambda: torch.kthvalue(x, 5))(torch.zeros(3, device=d))),
    "masked_fill_ with a uint8 mask": (RuntimeError, lambda d: (
        lambda x, m: lambda: x.masked_fill_(m, 1.0))(torch.zeros(3, device=d), torch.ones(3, dtype=torch.uint8, device=d))),
    # Two-output operators' out= forms take their results' dtypes only.
    **{f"{name} out= of another dtype": (RuntimeError, lambda d, call=call: (
        lambda x, v, i: lambda: call(x, v, i))(torch.randn(4, 5, device=d), torch.empty(0, device=d),
                                             torch.empty(0, device=d)))
       for name, call in {
           "sort": lambda x, v, i: torch.sort(x, out=(v, i)),
           "stable sort": lambda x, v, i: torch.sort(x, stable=True, out=(v, i)),
           "topk": lambda x, v, i: torch.topk(x, 2, out=(v.long(), i)),
           "max.dim": lambda x, v, i: torch.max(x, 0, out=(v, i)),
           "min.dim": lambda x, v, i: torch.min(x, 0, out=(v.long(), i.long())),
           "kthvalue": lambda x, v, i: torch.kthvalue(x, 2, out=(v, i)),
           "mode": lambda x, v, i: torch.mode(x, 0, out=(v, i)),
           "aminmax": lambda x, v, i: torch.aminmax(x, dim=0, out=(v.long(), i)),
       }.items()},
    "randperm beyond what the out= dtype holds": (RuntimeError, lambda d: (
        lambda out: lambda: torch.randperm(300, out=out))(torch.empty(0, dtype=torch.uint8, device=d))),
    "randperm beyond half's precision": (RuntimeError, lambda d: (
        lambda out: lambda: torch.randperm(2050, out=out))(torch.empty(0, dtype=torch.half, device=d))),
    "logspace into an out= whose elements share memory": (RuntimeError, lambda d: (
        lambda out: lambda: torch.logspace(1, 10, 10, out=out))(torch.zeros(1, device=d).expand(10))),
    "searchsorted into an out= of another dtype": (RuntimeError, lambda d: (
        lambda b, v, out: lambda: torch.searchsorted(b, v, out=out))(
            torch.tensor([1, 3, 5], device=d), torch.tensor([2, 4], device=d), torch.empty(2, device=d))),
    "searchsorted's side neither left nor right": (RuntimeError, lambda d: (
        lambda b: lambda: torch.searchsorted(b, b, side="bad"))(torch.tensor([1, 3, 5], device=d))),
    "histc over an infinite range": (RuntimeError, lambda d: (
        lambda x: lambda: torch.histc(x, bins=4, min=0, max=float("inf")))(torch.ones(3, device=d))),
    "histc with max below min": (RuntimeError, lambda d: (
        lambda x: lambda: torch.histc(x, bins=4, min=5, max=1))(torch.ones(3, device=d))),
    "mode's dimension out of range": (IndexError, lambda d: (
        lambda x: lambda: torch.mode(x, 3))(torch.zeros(4, 5, device=d))),
    "mode of an empty dimension": (IndexError, lambda d: (
        lambda x: lambda: torch.mode(x, 0))(torch.zeros(0, 5, device=d))),
    # CUDA's indexing hands a number to index_put_ as a CPU scalar, which
    # with a mask goes to masked_fill_ and its checks.
    "a number set through a uint8 mask": (RuntimeError, lambda d: (
        lambda x, m: lambda: x.__setitem__(m, 2.0))(torch.zeros(3, device=d), torch.ones(3, dtype=torch.uint8, device=d))),
    "a number set through a mask of another shape": (IndexError, lambda d: (
        lambda x, m: lambda: x.__setitem__(m, 2.0))(torch.zeros(2, 3, device=d), torch.ones(3, dtype=torch.bool, device=d))),
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


@pytest.mark.parametrize("shape", [(), (3,)])
def test_a_dtype_cuda_has_no_kernel_for_is_refused_at_the_call(foo, shape):
    # CUDA's aminmax kernels take no complex dtype; its host code refuses
    # one as it dispatches, before any launch.
    x = torch.ones(shape, dtype=torch.complex64, device="foo")
    foo._sleep(50)
    with pytest.raises(RuntimeError, match="not implemented for 'ComplexFloat'"):
        torch.aminmax(x, dim=0) if shape else torch.aminmax(x)
    assert not foo.current_stream().query()
    foo.synchronize()


def test_a_device_value_set_through_a_uint8_mask_is_put_with_the_deprecation_warning(foo):
    # A tensor already on the device takes index_put_'s path on CUDA too:
    # the uint8 mask is deprecated, not refused.
    x = torch.zeros(4, device="foo")
    mask = torch.tensor([1, 0, 1, 0], dtype=torch.uint8, device="foo")
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        x[mask] = torch.tensor(3.0, device="foo")
    assert x.cpu().tolist() == [3.0, 0.0, 3.0, 0.0]


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

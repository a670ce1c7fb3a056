"""Writes into memory that an input also occupies raise as on CPU and CUDA:
foo's checks see the real aliasing of foo tensors, at the call."""

import pytest
import torch

PARTIAL = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location"
INTERNAL = "unsupported operation: more than one element of the written-to tensor refers to a single memory location"


def _both(fn, make):
    """Runs fn on a CPU tensor and on a foo one; returns the two exceptions (or None)."""
    errors = []
    for device in ("cpu", "foo"):
        try:
            fn(make(device))
            errors.append(None)
        except RuntimeError as e:
            errors.append(e)
    return errors


def test_copy_from_a_transposed_view_of_itself(foo):
    a = torch.arange(16.0, device="foo").reshape(4, 4)
    with pytest.raises(RuntimeError, match=PARTIAL):
        a.copy_(a.t())
    assert a.cpu().equal(torch.arange(16.0).reshape(4, 4))   # and nothing was written


@pytest.mark.parametrize("case", ["add_out_shifted", "mul_out_shifted", "cumsum_out_shifted", "copy_shifted"])
def test_partial_overlap_raises_like_cpu(foo, case):
    fn = {
        "add_out_shifted": lambda b: torch.add(b[:-1], 1, out=b[1:]),
        "mul_out_shifted": lambda b: torch.mul(b[1:], b[:-1], out=b[:-1]),
        "cumsum_out_shifted": lambda b: torch.cumsum(b[:-1], 0, out=b[1:]),
        "copy_shifted": lambda b: b[1:].copy_(b[:-1]),
    }[case]
    cpu_error, foo_error = _both(fn, lambda d: torch.arange(8.0, device=d))
    assert (cpu_error is None) == (foo_error is None), (cpu_error, foo_error)
    if cpu_error is not None:
        assert "unsupported operation" in str(foo_error)


def test_internal_overlap_of_the_output_raises(foo):
    x = torch.zeros(1, device="foo").expand(4)
    with pytest.raises(RuntimeError, match=INTERNAL):
        x.add_(1)


@pytest.mark.parametrize("case", ["masked_fill_", "put_"])
def test_fallback_operator_sees_the_aliasing(foo, case):
    # Operators without a native foo kernel: the fallback's checks must see
    # that the written tensor overlaps an input, and raise at the call.
    fn = {
        "masked_fill_": lambda b: b[1:].masked_fill_(b[:-1], True),
        "put_": lambda b: b[1:].put_(torch.arange(7, device=b.device), b[:-1]),
    }[case]
    dtype = torch.bool if case == "masked_fill_" else torch.float32
    cpu_error, foo_error = _both(fn, lambda d: torch.zeros(8, device=d, dtype=dtype))
    assert cpu_error is not None and foo_error is not None, (cpu_error, foo_error)
    assert PARTIAL in str(foo_error)
    foo.synchronize()                 # and nothing failed later on the stream


def test_disjoint_views_of_one_tensor_still_work(foo):
    b = torch.arange(8.0, device="foo")
    b[:4].copy_(b[4:])
    torch.add(b[:2], 1, out=b[6:])
    assert b.cpu().tolist() == [4.0, 5.0, 6.0, 7.0, 4.0, 5.0, 5.0, 6.0]

"""Indexing with boolean masks (`x[mask]`): the result's size depends on the
mask's values, so the call waits for the stream, as on CUDA, and gives
what CPU gives: values, shape, dtype, warnings, errors and gradients."""

import warnings

import pytest
import torch


def _randn(*size, device, dtype=torch.float32):
    """CPU's random numbers (foo's generator draws others, as CUDA's does) on `device`."""
    return torch.randn(*size, dtype=dtype).to(device)


def _both(fn):
    """fn's result on CPU and on foo, with the warnings each raised."""
    results = []
    for device in ("cpu", "foo"):
        torch.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(device)
        results.append((out.cpu() if out.device.type == "foo" else out, [str(w.message) for w in caught]))
    return results


FORMS = {
    "vector": lambda d: (lambda v: v[v > 0])(_randn(64, device=d)),
    "matrix_by_matrix": lambda d: (lambda m: m[m > 0.5])(_randn(8, 6, device=d)),
    "leading_dims_of_3d": lambda d: (lambda t: t[t.sum(-1) > 0])(_randn(5, 4, 3, device=d)),
    "second_dim": lambda d: (lambda m: m[:, m[0] > 0])(_randn(4, 7, device=d)),
    "two_masks": lambda d: (lambda t: t[t[:, 0, 0] > 0, :, t[0, 0] > 0])(_randn(6, 3, 5, device=d)),
    "all_false": lambda d: (lambda m: m[m > 100])(_randn(3, 4, device=d)),
    "uint8_mask": lambda d: (lambda v: v[(v > 0).to(torch.uint8)])(_randn(16, device=d)),
    "mask_on_cpu": lambda d: torch.arange(10.0, device=d)[torch.arange(10) % 3 == 0],
    "zero_dim": lambda d: torch.tensor(2.5, device=d)[torch.tensor(True, device=d)],
    "transposed": lambda d: (lambda m: m.t()[m.t() > 0])(_randn(5, 9, device=d)),
    "integers": lambda d: (lambda v: v[v % 2 == 1])(torch.arange(20, device=d)),
    "complex": lambda d: (lambda z: z[z.real > 0])(_randn(12, dtype=torch.complex64, device=d)),
    "with_integer_index": lambda d: (lambda m: m[m[:, 0] > 0, torch.tensor([2, 0], device=d)])(
        _randn(6, 3, device=d)),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_boolean_index_gives_what_cpu_gives(foo, form):
    (want, want_warnings), (got, got_warnings) = _both(FORMS[form])
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want)
    assert got_warnings == want_warnings


def test_boolean_index_waits_for_the_work_before_it(foo):
    x = torch.tensor([0.0, 3.0, 0.0, 5.0], device="foo")
    foo._sleep(100)  # the stream is busy for a while
    x.add_(1)
    picked = x[x > 2]
    assert foo.current_stream().query()  # it waited, as CUDA's does through nonzero
    assert picked.cpu().tolist() == [4.0, 6.0]
    assert "aten::index.Tensor" in foo.synchronizing_ops()


def test_a_mask_of_the_wrong_shape_raises_cpus_error_at_the_call(foo):
    x = torch.randn(4, 3)
    mask = torch.tensor([True, False, True])
    with pytest.raises(IndexError) as on_cpu:
        x[mask]
    with pytest.raises(IndexError) as on_foo:
        x.to("foo")[mask.to("foo")]
    assert str(on_foo.value) == str(on_cpu.value)


def test_a_mask_on_another_foo_device_raises_at_the_call(foo):
    x = torch.randn(4, device="foo:0")
    with pytest.raises(RuntimeError, match="foo:1"):
        x[torch.ones(4, dtype=torch.bool, device="foo:1")]


def test_the_gradient_through_a_boolean_index_is_cpus(foo):
    grads = []
    for device in ("cpu", "foo"):
        torch.manual_seed(0)
        w = _randn(6, 5, device=device).requires_grad_()
        (w[w > 0] * 3).sum().backward()
        grads.append(w.grad.cpu())
    assert torch.equal(grads[0], grads[1])


def test_a_boolean_index_under_graph_capture_raises_and_leaves_foo_usable(foo):
    x = torch.ones(4, device="foo")
    g = foo.FooGraph()
    with pytest.raises(RuntimeError, match="capturing|capture"):
        with foo.graph(g):
            x[x > 0]
    assert not foo.is_current_stream_capturing()
    assert x[x > 0].cpu().tolist() == [1.0] * 4

"""Only operators whose results depend on the data make the host wait for the
device, as on CUDA: everything else returns once its work is queued."""

import threading

import pytest
import torch

from conftest import held_stream


def _returns_while_held(foo, fn):
    """Calls ``fn`` while the current stream is held shut by a gate: a
    call that waited for the stream would wait for the gate's timeout and
    then fail with the gate's error."""
    with held_stream() as still_held:
        result = fn()
        assert still_held() and not foo.current_stream().query()  # fn's work is queued behind the gate
    return result


@pytest.mark.parametrize("name", ["arange", "linspace", "index_select_out", "sort", "arange_out", "cumsum_out"])
def test_operators_with_known_output_shapes_do_not_wait(foo, name):
    # Made before the stream is busy: filling a tensor from host data waits
    # for the stream, on CUDA too.
    x = torch.tensor([3.0, 1.0, 2.0], device="foo")
    index = torch.tensor([2, 0], device="foo")
    make = {
        "arange": lambda: torch.arange(5, device="foo"),
        "linspace": lambda: torch.linspace(0, 1, 5, device="foo"),
        "index_select_out": lambda: torch.index_select(x, 0, index,
                                                       out=torch.empty(2, device="foo")),
        "sort": lambda: torch.sort(x).values,
        "arange_out": lambda: torch.arange(4, out=torch.empty(0, device="foo", dtype=torch.long)),
        "cumsum_out": lambda: torch.cumsum(x, 0, out=torch.empty(3, device="foo")),
    }[name]
    expected = {
        "arange": [0, 1, 2, 3, 4], "linspace": [0.0, 0.25, 0.5, 0.75, 1.0], "index_select_out": [2.0, 3.0],
        "sort": [1.0, 2.0, 3.0], "arange_out": [0, 1, 2, 3], "cumsum_out": [3.0, 4.0, 6.0],
    }[name]
    make()  # once before: a first Python meta function imports half of torch (sympy among it)
    foo.synchronize()
    result = _returns_while_held(foo, make)
    assert result.cpu().tolist() == expected


def test_a_number_set_through_a_mask_does_not_wait(foo):
    # As on CUDA, where the number reaches index_put_ as a CPU scalar and
    # the mask goes to masked_fill_: the mask never becomes indices
    # (nonzero, which waits).
    x = torch.tensor([-1.0, 2.0, -3.0, 4.0], device="foo")
    rows = torch.arange(8.0, device="foo").reshape(2, 4)
    columns = torch.tensor([True, False, True, False], device="foo")  # a copy from the host waits: made before
    foo.synchronize()

    def set_through_masks():
        x[x < 0] = 0.0
        rows[:, columns] = -1

    _returns_while_held(foo, set_through_masks)
    assert x.cpu().tolist() == [0.0, 2.0, 0.0, 4.0]
    assert rows.cpu().tolist() == [[-1, 1, -1, 3], [-1, 5, -1, 7]]


def test_data_dependent_operators_synchronize_and_are_listed(foo):
    x = torch.tensor([0.0, 1.0, 0.0, 2.0], device="foo")
    foo._sleep(100)
    idx = torch.nonzero(x)
    assert foo.current_stream().query()          # nonzero waited, as on CUDA
    assert idx.cpu().flatten().tolist() == [1, 3]
    assert "aten::nonzero" in foo.synchronizing_ops()
    torch.arange(3, device="foo")
    assert not any(op.startswith("aten::arange") for op in foo.synchronizing_ops())


def test_out_argument_of_the_wrong_size_is_resized_with_the_usual_warning(foo):
    out = torch.empty(7, device="foo")
    with pytest.warns(UserWarning, match="resized"):
        torch.cumsum(torch.ones(3, device="foo"), 0, out=out)
    assert out.shape == (3,) and out.cpu().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("name", ["cummax", "cummin", "logcumsumexp", "fused_sgd", "fused_adagrad",
                                  "fused_adam_tensor_lr", "fused_adamw_tensor_lr", "fused_sgd_tensor_lr"])
def test_operators_without_a_meta_function_but_known_results_do_not_wait(foo, name):
    # torch has no meta function for these; their results are known anyway
    # (nothing but arguments their callers sized, or one of the input's
    # shape), so they are queued as CUDA launches them.
    x = torch.tensor([[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]])
    grad = torch.tensor([[0.5, -1.0, 2.0], [1.0, 1.0, -3.0]])
    if name in ("cummax", "cummin", "logcumsumexp"):
        op = {"cummax": lambda t: torch.cummax(t, 1).values, "cummin": lambda t: torch.cummin(t, 1).indices,
              "logcumsumexp": lambda t: torch.logcumsumexp(t, 1)}[name]
        expected = op(x)
        x_foo = x.to("foo")
        result = _returns_while_held(foo, lambda: op(x_foo))
    else:
        optimizer, extra = {"fused_sgd": ("SGD", dict(lr=0.1, momentum=0.9)), "fused_adagrad": ("Adagrad", {}),
                            "fused_adam_tensor_lr": ("Adam", {}), "fused_adamw_tensor_lr": ("AdamW", {}),
                            "fused_sgd_tensor_lr": ("SGD", {})}[name]

        def stepper(device):
            p = torch.nn.Parameter(x.clone().to(device))
            p.grad = grad.to(device)
            lr = torch.tensor(0.01, device=device) if name.endswith("tensor_lr") else extra.pop("lr", 0.1)
            opt = getattr(torch.optim, optimizer)([p], lr=lr, fused=True, **extra)
            opt.step()  # the first step makes the optimizer's state
            return p, opt.step

        expected, cpu_step = stepper("cpu")
        cpu_step()
        result, step = stepper("foo")
        torch.foo.synchronize()
        _returns_while_held(foo, step)
    torch.testing.assert_close(result.detach().cpu(), expected.detach())
    assert not any(s.startswith(("aten::_cum", "aten::_logcumsumexp", "aten::_fused"))
                   for s in foo.synchronizing_ops())


def test_reads_from_several_threads_are_each_counted_once_per_take(foo):
    from torch_foo import _C

    v = torch.arange(4.0, device="foo")
    v.sum().item()
    _C._take_op_counts()

    def reads(n):
        for _ in range(n):
            v.sum().item()

    threads = [threading.Thread(target=reads, args=(n,)) for n in (300, 200)]
    for t in threads:
        t.start()
    reads(100)
    for t in threads:
        t.join()
    _, host_syncs = _C._take_op_counts()
    assert host_syncs["aten::_local_scalar_dense"] == 600
    reads(3)
    _, host_syncs = _C._take_op_counts()
    assert host_syncs == {"aten::_local_scalar_dense": 3}
    assert "aten::_local_scalar_dense" in foo.synchronizing_ops()

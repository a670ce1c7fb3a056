"""Autograd on foo: gradients on the device, accumulation, retain_graph,
higher order, and backward of work queued on a side stream."""

import pytest
import torch

from conftest import run_python, run_python_json


def test_gradients_land_on_foo_and_match_cpu(foo):
    torch.manual_seed(0)
    w = torch.randn(5, 3)
    x = torch.randn(4, 5)
    fw = w.foo().requires_grad_()
    wc = w.clone().requires_grad_()
    (x.foo() @ fw).tanh().sum().backward()
    (x @ wc).tanh().sum().backward()
    assert fw.grad.device == torch.device("foo:0")
    torch.testing.assert_close(fw.grad.cpu(), wc.grad)


def test_accumulation_and_retain_graph(foo):
    w = torch.ones(3, device="foo", requires_grad=True)
    y = (w * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert w.grad.cpu().tolist() == [4.0, 4.0, 4.0]
    (w * 3).sum().backward()
    assert w.grad.cpu().tolist() == [7.0, 7.0, 7.0]


def test_higher_order_gradients(foo):
    x = torch.tensor([1.0, 2.0], device="foo", requires_grad=True)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert g.cpu().tolist() == [3.0, 12.0] and h.cpu().tolist() == [6.0, 12.0]


def test_backward_of_side_stream_work_follows_stream_semantics():
    # Launches start late, so any missing stream synchronization in the
    # backward would read stale data; the gradients must still be exact.
    out = run_python_json("""
        import json, torch
        torch.manual_seed(0)
        w, x = torch.randn(8, 8), torch.randn(4, 8)
        wc = w.clone().requires_grad_()
        (x @ wc).relu().pow(2).sum().backward()
        fw = w.foo().requires_grad_()
        side = torch.foo.Stream()
        side.wait_stream(torch.foo.current_stream())
        with torch.foo.stream(side):
            loss = (x.foo() @ fw).relu().pow(2).sum()
        torch.foo.current_stream().wait_stream(side)
        loss.backward()                       # from the default stream
        torch.foo.synchronize()
        print(json.dumps(torch.allclose(fw.grad.cpu(), wc.grad, atol=1e-5)))
    """, env={"FOO_SIM_LAUNCH_DELAY_US": "2000"})
    assert out is True


EXITS_RIGHT_AFTER_BACKWARD = """
import torch

torch.set_num_threads(2)
x = torch.randn(64, 64, device="foo")
w = torch.randn(64, 64, device="foo", requires_grad=True)
for _ in range(10):
    w.grad = None
    loss = 0
    for _ in range(20):
        h = (x @ w).relu()
        loss = loss + h.sum()
        z = torch.softmax(h, dim=1)
        z.max().item()
        torch.nonzero(z > z.mean())
    loss.backward()
print(loss.item())
"""


@pytest.mark.slow
def test_a_program_that_exits_right_after_backward_exits_cleanly():
    # The autograd device thread that finishes a backward pass may drop the
    # last reference to its graph task (which holds a Python object) after
    # backward() returned: without torch_foo's exit hook, a program ending
    # there aborted in about one run in six ("terminate called without an
    # active exception"; run_python fails on the exit code).
    for _ in range(12):
        assert float(run_python(EXITS_RIGHT_AFTER_BACKWARD)) > 0

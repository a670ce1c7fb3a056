"""Kernels replayed from a graph compute what the operator computes now, on
the replay's inputs: a captured TensorIterator operator keeps its iterator
from one replay to the next only where that gives the same result, and
replays again from scratch where it would not (converted copies of foo
inputs, temporary outputs, CPU kernels that change their iterator)."""

import pytest
import torch


def replay_and_compare(foo, inputs, fn, replays=3):
    """Captures out = fn(*inputs) and checks every replay against CPU after
    new values are written into the inputs."""
    g = foo.FooGraph()
    with foo.graph(g):
        out = fn(*inputs)
    gen = torch.Generator().manual_seed(0)
    for _ in range(replays):
        fresh = [torch.randn(t.shape, generator=gen).to(t.dtype) for t in inputs]
        for t, f in zip(inputs, fresh):
            t.copy_(f)
        g.replay()
        torch.testing.assert_close(out.cpu(), fn(*fresh), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_pointwise_chain_follows_new_inputs(foo, dtype):
    a = torch.zeros(64, 33, device="foo", dtype=dtype)
    b = torch.zeros(64, 33, device="foo", dtype=dtype)
    replay_and_compare(foo, [a, b], lambda x, y: ((x + y * 2).clamp(-1, 1) - y.abs()).mul(0.5))


def test_broadcast_and_strided_inputs_follow_new_inputs(foo):
    a = torch.zeros(8, 1, device="foo")
    b = torch.zeros(5, 8, device="foo")
    replay_and_compare(foo, [a, b], lambda x, y: torch.atan2(x, y.t()) + x.exp())


def test_foo_input_converted_to_the_common_dtype_is_read_at_each_replay(foo):
    # float32 + float16: CPU's iterator converts the half input into a
    # float32 copy; a copy kept from the first replay would be stale.
    a = torch.zeros(100, device="foo")
    b = torch.zeros(100, device="foo", dtype=torch.float16)
    replay_and_compare(foo, [a, b], lambda x, y: x + y)


def test_output_of_another_dtype_is_written_at_each_replay(foo):
    # Half inputs into a float32 out=: CPU computes into a half temporary
    # and copies it into the output.
    a = torch.zeros(50, device="foo", dtype=torch.float16)
    b = torch.zeros(50, device="foo", dtype=torch.float16)
    out = torch.empty(50, device="foo")

    def add_into(x, y):
        if x.device.type == "cpu":
            return (x + y).float()
        return torch.add(x, y, out=out)

    replay_and_compare(foo, [a, b], add_into)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_in_place_scalar_ops_compound_over_replays(foo, dtype):
    # For half and bfloat16 CPU's multiply drops its scalar operand from the
    # iterator as it runs: that iterator cannot be run again as it is.
    x = torch.ones(1000, device="foo", dtype=dtype)
    g = foo.FooGraph()
    with foo.graph(g):
        x.mul_(2.0)
        x.add_(1.0)
    expected = torch.ones(1000, dtype=dtype)
    for _ in range(4):
        g.replay()
        expected = expected * 2.0 + 1.0
        assert torch.equal(x.cpu(), expected)


def test_integer_and_bool_ops_follow_new_inputs(foo):
    a = torch.zeros(40, device="foo", dtype=torch.int64)
    b = torch.ones(40, device="foo", dtype=torch.int64)
    g = foo.FooGraph()
    with foo.graph(g):
        s = a * 3 - b
        m = torch.bitwise_and(a > b, b.bool())
    for k in range(3):
        a.copy_(torch.arange(40) + k)
        b.copy_(torch.arange(40) % (k + 2))
        g.replay()
        ca, cb = torch.arange(40) + k, torch.arange(40) % (k + 2)
        assert torch.equal(s.cpu(), ca * 3 - cb)
        assert torch.equal(m.cpu(), torch.bitwise_and(ca > cb, cb.bool()))


def test_replays_of_two_instantiations_of_one_capture_agree(foo):
    # keep_graph: instantiating again while a replay of the previous
    # executable graph is still queued behind a sleeping kernel.
    x = torch.ones(256, device="foo")
    y = torch.zeros(256, device="foo")
    g = torch.accelerator.Graph(keep_graph=True)
    with torch.Stream("foo"), g:
        torch.add(x, 1.0, out=y)
        y.mul_(3.0)
    g.instantiate()
    foo._sleep(100)
    g.replay()
    g.instantiate()
    g.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((256,), 6.0))


def test_replays_queued_behind_a_busy_stream_read_inputs_in_stream_order(foo):
    # Inputs rewritten by work queued between replays, all behind a sleeping
    # kernel: the replays after the first, which rerun a kept iterator, must
    # read each input as the stream has it when they run, not at launch.
    x = torch.zeros(1000, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        y = x * 3 + 1
    g.replay()
    foo.synchronize()
    foo._sleep(200)
    outputs = []
    for k in range(4):
        x.fill_(float(k))
        g.replay()
        outputs.append(y.clone())
    for k, out in enumerate(outputs):
        assert torch.equal(out.cpu(), torch.full((1000,), 3.0 * k + 1))

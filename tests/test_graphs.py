"""Graph capture and replay on foo: torch.accelerator.Graph, torch.foo.FooGraph,
torch.foo.graph, make_graphed_callables, private pools and graph-safe RNG."""

import copy
import threading
import time

import pytest
import torch
import torch.nn.functional as F

from conftest import held_stream

DEFAULT_STREAM_REFUSED = "graphs must be captured on a non-default stream"


def test_accelerator_graph_captures_on_a_side_stream_and_replays(foo):
    x = torch.zeros(1000, device="foo")
    s = torch.Stream("foo")
    g = torch.accelerator.Graph()
    with s, g:
        x += 1
        x.mul_(2)
    foo.synchronize()
    assert x.sum().item() == 0  # captured, not run
    for _ in range(3):
        g.replay()
    foo.synchronize()
    # ((0 + 1) * 2 + 1) * 2 + 1) * 2 = 14
    assert torch.equal(x.cpu(), torch.full((1000,), 14.0))


@pytest.mark.parametrize("kind, begin", [
    pytest.param(torch.accelerator.Graph, lambda g: g.__enter__(), id="with-accelerator-Graph"),
    pytest.param(torch.accelerator.Graph, lambda g: g.capture_begin(), id="accelerator-Graph-capture_begin"),
    pytest.param(lambda: torch.foo.FooGraph(), lambda g: g.capture_begin(), id="FooGraph-capture_begin"),
    pytest.param(lambda: torch.foo.FooGraph(), lambda g: torch.foo.graph(g, stream=torch.foo.default_stream()).__enter__(),
                 id="foo-graph-on-the-default-stream"),
])
def test_capture_on_the_default_stream_is_refused_as_on_cuda(foo, kind, begin):
    # Device-agnostic code that captures on the default stream fails on a
    # GPU; it must fail on foo, at capture_begin, with CUDA's message.
    x = torch.ones(10, device="foo")
    g = kind()
    assert foo.current_stream() == foo.default_stream()
    with pytest.raises(RuntimeError, match=DEFAULT_STREAM_REFUSED):
        begin(g)
    assert not foo.is_current_stream_capturing()
    assert foo.current_stream() == foo.default_stream()
    x.add_(1)  # the default stream runs work as before
    # The same graph then captures on a side stream and replays anywhere.
    with torch.Stream("foo"), g:
        x.add_(3)
    g.replay()
    assert torch.equal(x.cpu(), torch.full((10,), 5.0))


def test_explicit_capture_begin_and_end_must_end_on_the_capturing_stream(foo):
    x = torch.zeros(5, device="foo")
    s = foo.Stream()
    g = torch.accelerator.Graph()
    with foo.stream(s):
        g.capture_begin()
        x.add_(2)
    with pytest.raises(RuntimeError, match="must end on the stream it began on"):
        g.capture_end()  # the current stream is the default one here
    with foo.stream(s):
        g.capture_end()
    g.replay()
    assert torch.equal(x.cpu(), torch.full((5,), 2.0))


def test_out_of_place_outputs_keep_their_address_and_follow_new_inputs(foo):
    static_in = torch.arange(6.0, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        static_out = static_in * 2 + 1
    address = static_out.data_ptr()
    for k in range(3):
        static_in.copy_(torch.arange(6.0) + k)
        g.replay()
        assert static_out.data_ptr() == address
        assert torch.equal(static_out.cpu(), (torch.arange(6.0) + k) * 2 + 1)


def test_replay_is_asynchronous_and_stream_ordered(foo):
    x = torch.zeros(4, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        foo._sleep(300)
        x.add_(1)
    start = time.monotonic()
    g.replay()
    returned = time.monotonic() - start
    assert not foo.current_stream().query()  # still sleeping: the host did not wait
    x.add_(10)  # queued after the replay on the same stream
    assert torch.equal(x.cpu(), torch.full((4,), 11.0))
    assert returned < 0.25


def test_fork_and_join_inside_a_capture_run_concurrently(foo):
    a = torch.zeros(8, device="foo")
    b = torch.zeros(8, device="foo")
    side = foo.Stream()
    g = foo.FooGraph()
    with foo.graph(g):
        main = foo.current_stream()
        side.wait_stream(main)  # fork
        with foo.stream(side):
            foo._sleep(400)
            b.add_(2)
        foo._sleep(400)
        a.add_(1)
        main.wait_stream(side)  # join
        a.add_(b)
    foo.synchronize()
    start = time.monotonic()
    g.replay()
    foo.synchronize()
    elapsed = time.monotonic() - start
    assert torch.equal(a.cpu(), torch.full((8,), 3.0))
    assert elapsed < 0.75, f"the two sleeping lanes ran one after the other ({elapsed:.2f} s)"


def test_unjoined_side_stream_fails_the_capture_and_foo_stays_usable(foo):
    x = torch.zeros(4, device="foo")
    side = foo.Stream()
    g = foo.FooGraph()
    with pytest.raises(RuntimeError, match="joined"):
        with foo.graph(g):
            side.wait_stream(foo.current_stream())
            with foo.stream(side):
                x.add_(1)
    assert not foo.is_current_stream_capturing()
    x.add_(5)
    side.wait_stream(foo.current_stream())
    with foo.stream(side):
        x.add_(1)
    foo.synchronize()
    assert torch.equal(x.cpu(), torch.full((4,), 6.0))
    with pytest.raises(RuntimeError, match="no captured graph"):
        g.replay()


@pytest.mark.parametrize(
    "illegal",
    [
        pytest.param(lambda x: x.sum().item(), id="item"),
        pytest.param(lambda x: torch.accelerator.synchronize(), id="synchronize"),
        pytest.param(lambda x: torch.nonzero(x), id="nonzero"),
        pytest.param(lambda x: x.cpu(), id="cpu"),
    ],
)
def test_illegal_operations_raise_and_leave_foo_usable(foo, illegal):
    x = torch.ones(4, device="foo")
    g = foo.FooGraph()
    with pytest.raises(RuntimeError, match="capturing|capture"):
        with foo.graph(g):
            x.add_(1)
            illegal(x)
    assert not foo.is_current_stream_capturing()
    # The stream that captured works normally again.
    y = x + 1
    assert torch.equal(y.cpu(), torch.full((4,), 2.0))
    with pytest.raises(RuntimeError, match="no captured graph"):
        g.replay()


def test_replay_of_a_graph_never_captured_raises(foo):
    with pytest.raises(RuntimeError, match="no captured graph"):
        torch.accelerator.Graph().replay()
    with pytest.raises(RuntimeError, match="not captured"):
        torch.accelerator.Graph().pool()


def test_is_capturing_inside_and_outside(foo):
    s = torch.Stream("foo")
    g = torch.accelerator.Graph()
    assert not s.is_capturing()
    with s, g:
        assert s.is_capturing()
        assert foo.is_current_stream_capturing()
        assert not foo.default_stream().is_capturing()
        torch.ones(1, device="foo")
    assert not s.is_capturing()


def test_keep_graph_instantiate_debug_dump_reset_and_recapture(foo, tmp_path):
    x = torch.zeros(3, device="foo")
    g = torch.accelerator.Graph(keep_graph=True)
    g.enable_debug_mode()
    with torch.Stream("foo"), g:
        x.add_(1)
        x.mul_(3)
    g.instantiate()
    g.replay()
    path = tmp_path / "graph.dot"
    g.debug_dump(str(path))
    dump = path.read_text()
    assert dump.startswith("digraph")
    assert "aten::add" in dump and "aten::mul" in dump and "n0 -> n1" in dump
    assert torch.equal(x.cpu(), torch.full((3,), 3.0))
    g.reset()
    with pytest.raises(RuntimeError, match="no captured graph"):
        g.replay()
    with torch.Stream("foo"), g:
        x.sub_(1)
    g.replay()
    assert torch.equal(x.cpu(), torch.full((3,), 2.0))


def test_capture_allocations_come_from_the_graph_pool_which_outlives_empty_cache(foo):
    static_in = torch.ones(256 * 1024, device="foo")  # 1 MiB
    g = foo.FooGraph()
    with foo.graph(g):
        tmp = static_in * 3
        out = tmp + 1
        del tmp
    pool = g.pool()
    assert pool != (0, 0)

    def pool_segments():
        return [s for s in foo.memory._snapshot()["segments"] if tuple(s["segment_pool_id"]) == pool]

    assert pool_segments()
    reserved = foo.memory_reserved()
    foo.empty_cache()
    assert pool_segments() and foo.memory_reserved() == reserved
    g.replay()
    assert torch.equal(out.cpu(), torch.full((256 * 1024,), 4.0))
    stats = foo.memory_stats()
    assert stats["allocated_bytes.all.current"] >= out.numel() * 4
    # Gone with the graph and its last tensor.
    g.reset()
    del out
    foo.empty_cache()
    assert not pool_segments()


def test_reset_with_replays_queued_returns_at_once_and_the_pool_goes_back_at_empty_cache(foo):
    # As CUDA's: reset() only gives the graph's pool up; its memory goes
    # back at the next empty_cache, and nothing waits for the device.
    x = torch.ones(256 * 1024, device="foo")  # 1 MiB
    g = foo.FooGraph()
    with foo.graph(g):
        y = x * 2  # from the graph's pool
    pool = g.pool()

    def pool_segments():
        return [s for s in foo.memory._snapshot()["segments"] if tuple(s["segment_pool_id"]) == pool]

    side = foo.Stream()
    z = torch.ones(1000, device="foo")
    with held_stream() as still_held:
        side.wait_stream(foo.current_stream())  # side's work comes after the gate
        with foo.stream(side):
            z.add_(1)
        z.record_stream(side)
        del z  # its block waits for side's work: a free the allocator has pending
        g.replay()  # queued behind the gate
        g.reset()
        assert still_held(), "reset() waited for the device"
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((256 * 1024,), 2.0))  # the queued replay ran
    del y
    assert pool_segments()  # given up, not yet returned
    foo.empty_cache()
    assert not pool_segments()


def test_graphs_share_a_pool(foo):
    x = torch.ones(1000, device="foo")
    g1 = foo.FooGraph()
    with foo.graph(g1):
        y = x * 2
    g2 = foo.FooGraph()
    with foo.graph(g2, pool=g1.pool()):
        z = y + 1
    assert g2.pool() == g1.pool()
    assert torch_foo_pool_uses(foo, g1.pool()) == 2
    g1.replay()
    g2.replay()
    assert torch.equal(z.cpu(), torch.full((1000,), 3.0))
    handle = foo.graph_pool_handle()
    g3 = foo.FooGraph()
    with foo.graph(g3, pool=handle):
        w = z - 1
    assert g3.pool() == handle
    g3.replay()
    assert torch.equal(w.cpu(), torch.full((1000,), 2.0))
    del g1
    assert torch_foo_pool_uses(foo, g2.pool()) == 1


def torch_foo_pool_uses(foo, pool):
    from torch_foo import _C

    return _C._graph_pool_use_count(foo.current_device(), pool)


def test_random_numbers_are_fresh_each_replay_and_match_eager(foo):
    foo.manual_seed(7)
    out = torch.empty(1000, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        out.copy_(torch.rand(1000, device="foo"))
        out.add_(torch.randn(1000, device="foo"))
    foo.manual_seed(123)
    state_before = foo.get_rng_state()
    replays = []
    for _ in range(2):
        g.replay()
        replays.append(out.cpu())
    state_after_replays = foo.get_rng_state()
    foo.set_rng_state(state_before)  # read by the next replay, not by the capture
    g.replay()
    assert torch.equal(out.cpu(), replays[0])
    foo.manual_seed(123)
    eager = [(torch.rand(1000, device="foo") + torch.randn(1000, device="foo")).cpu() for _ in range(2)]
    assert not torch.equal(replays[0], replays[1])
    assert torch.equal(replays[0], eager[0]) and torch.equal(replays[1], eager[1])
    assert not torch.equal(state_after_replays, state_before)
    assert torch.equal(foo.get_rng_state(), state_after_replays)


def test_dropout_in_a_graph_matches_eager_for_a_fixed_seed(foo):
    x = torch.ones(4096, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        y = F.dropout(x, p=0.5, training=True)
    foo.manual_seed(5)
    g.replay()
    first = y.cpu()
    g.replay()
    second = y.cpu()
    foo.manual_seed(5)
    eager_first = F.dropout(x, p=0.5, training=True).cpu()
    eager_second = F.dropout(x, p=0.5, training=True).cpu()
    assert torch.equal(first, eager_first) and torch.equal(second, eager_second)
    assert not torch.equal(first, second)
    assert set(first.unique().tolist()) == {0.0, 2.0}


def test_two_devices_each_with_their_own_graph(foo):
    graphs, tensors = [], []
    for d in range(2):
        with foo.device(d):
            x = torch.full((16,), float(d + 1), device=f"foo:{d}")
            g = foo.FooGraph()
            with foo.graph(g):
                x.mul_(10)
            graphs.append(g)
            tensors.append(x)
    for d, g in enumerate(graphs):
        with foo.device(d):
            g.replay()
    assert torch.equal(tensors[0].cpu(), torch.full((16,), 10.0))
    assert torch.equal(tensors[1].cpu(), torch.full((16,), 20.0))


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def test_make_graphed_callables_forward_and_backward_match_eager(foo):
    eager = _mlp().to("foo")
    graphed = copy.deepcopy(eager)
    sample = torch.randn(16, 32, device="foo", requires_grad=True)
    graphed = foo.make_graphed_callables(graphed, (sample,))
    for step in range(3):
        x = torch.randn(16, 32, device="foo")
        xe = x.clone().requires_grad_()
        xg = x.clone().requires_grad_()
        ye = eager(xe)
        yg = graphed(xg)
        torch.testing.assert_close(yg, ye)
        ye.square().sum().backward()
        yg.square().sum().backward()
        torch.testing.assert_close(xg.grad, xe.grad)
        for pe, pg in zip(eager.parameters(), graphed.parameters()):
            torch.testing.assert_close(pg.grad, pe.grad)
            pe.grad = None
            pg.grad = None
    graphed.eval()  # eval runs the eager forward
    torch.testing.assert_close(graphed(x), eager(x))


def test_whole_training_step_captured_matches_eager_training(foo):
    def train(capture):
        model = _mlp().to("foo")
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)
        torch.manual_seed(1)
        data = [(torch.randn(16, 32), torch.randn(16, 8)) for _ in range(6)]
        static_x = torch.zeros(16, 32, device="foo")
        static_y = torch.zeros(16, 8, device="foo")

        def step():
            opt.zero_grad(set_to_none=False)
            loss = F.mse_loss(model(static_x), static_y)
            loss.backward()
            opt.step()
            return loss

        # Warm-up (momentum buffers, gradients) outside the capture.
        static_x.copy_(data[0][0])
        static_y.copy_(data[0][1])
        side = foo.Stream()
        side.wait_stream(foo.current_stream())
        with foo.stream(side):
            step()
        foo.current_stream().wait_stream(side)
        losses = []
        if capture:
            g = foo.FooGraph()
            with foo.graph(g):
                static_loss = step()
        for x, y in data[1:]:
            static_x.copy_(x)
            static_y.copy_(y)
            if capture:
                g.replay()
                losses.append(static_loss.item())
            else:
                losses.append(step().item())
        return losses, [p.detach().cpu() for p in model.parameters()]

    eager_losses, eager_params = train(capture=False)
    graph_losses, graph_params = train(capture=True)
    assert eager_losses[-1] < eager_losses[0]
    torch.testing.assert_close(graph_losses, eager_losses)
    for pe, pg in zip(eager_params, graph_params):
        torch.testing.assert_close(pg, pe)


def test_a_graph_deleted_while_its_replay_is_queued_still_runs_it(foo):
    out = torch.zeros(1000, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        foo._sleep(200)
        out.copy_(torch.rand(1000, device="foo"))
    foo.manual_seed(3)
    g.replay()
    del g  # the replay, its kernels and the generator state they read outlive the graph
    after = torch.rand(1000, device="foo")  # queued after the replay, from the advanced offset
    foo.manual_seed(3)
    assert torch.equal(out.cpu(), torch.rand(1000, device="foo").cpu())
    assert not torch.equal(out.cpu(), after.cpu())


def test_replays_queued_behind_a_busy_stream_each_read_their_own_generator_state(foo):
    out = torch.empty(1000, device="foo")
    g = foo.FooGraph()
    with foo.graph(g):
        out.copy_(torch.rand(1000, device="foo"))
    results = torch.empty(2, 1000, device="foo")
    foo._sleep(300)  # both replays and their generator writes wait behind this
    for k, seed in enumerate((1, 2)):
        foo.manual_seed(seed)
        g.replay()
        results[k].copy_(out)
    assert not foo.current_stream().query()
    expected = []
    for seed in (1, 2):
        foo.manual_seed(seed)
        expected.append(torch.rand(1000, device="foo").cpu())
    assert torch.equal(results[0].cpu(), expected[0]) and torch.equal(results[1].cpu(), expected[1])


def test_check_input_liveness_names_an_input_freed_before_replay(foo):
    x = torch.ones(1000, device="foo")
    w = torch.full((1000,), 3.0, device="foo")
    staged = torch.full((1000,), 5.0).pin_memory()
    landing = torch.empty(1000, device="foo")
    g = foo.FooGraph()
    with foo.graph(g, check_input_liveness=True):
        made_inside = torch.ones(1000, device="foo")
        y = x * w + made_inside
        landing.copy_(staged, non_blocking=True)
        del made_inside  # the graph's own memory: its pool keeps it
    g.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((1000,), 4.0))
    assert torch.equal(landing.cpu(), torch.full((1000,), 5.0))
    # Every external input alive (y, made during the capture, is not one).
    del y
    g.replay()
    # A weight freed since the capture: the replay would read freed memory.
    del w
    with pytest.raises(RuntimeError, match=r"1 tensor\(s\) that the capture read") as raised:
        g.replay()
    message = str(raised.value)
    assert "y = x * w + made_inside" in message and "del w" in message
    # Its pinned source freed as well: both named.
    del staged
    with pytest.raises(RuntimeError, match=r"2 tensor\(s\)"):
        g.replay()
    foo.synchronize()


def test_check_input_liveness_is_off_by_default_and_ends_with_reset(foo):
    w = torch.full((1000,), 3.0, device="foo")
    g = foo.FooGraph()
    with foo.stream(foo.Stream()):
        g.capture_begin(check_input_liveness=True)
        y = w * 2
        g.capture_end()
        g.reset()  # the graph and its check are gone
        g.capture_begin()
        y = w * 2
        g.capture_end()
    del w
    g.replay()  # not checked: reads memory whose tensor is gone, as on CUDA
    foo.synchronize()
    assert y.shape == (1000,)


def test_recapture_into_a_pool_handle_after_reset(foo):
    # Recapturing for a new input shape, into the same pool: the pool of the
    # reset graph is gone, its id usable again, with the context manager
    # (which empties the caches first, as torch.cuda.graph) and without.
    x = torch.ones(10, device="foo")
    handle = foo.graph_pool_handle()
    g = foo.FooGraph()
    with foo.graph(g, pool=handle):
        y = x * 2
    g.reset()
    with foo.graph(g, pool=handle):
        y = x * 3
    g.replay()
    assert torch.equal(y.cpu(), torch.full((10,), 3.0))
    g.reset()
    s = foo.Stream()
    with foo.stream(s):
        g.capture_begin(pool=handle)
        y = x * 4
        g.capture_end()
    g.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((10,), 4.0))


def test_refused_capture_begin_leaves_no_capture(foo):
    # Two captures into one pool at once: the second is refused before its
    # stream starts capturing, and the device keeps working.
    x = torch.ones(10, device="foo")
    handle = foo.graph_pool_handle()
    s1, s2 = foo.Stream(), foo.Stream()
    with foo.stream(s2):
        # g2's capture_begin allocates a small block on s2 (its generator
        # slot): cached now, so that it needs no fooMalloc, which this
        # thread may not call while it captures.
        torch.empty(2, dtype=torch.long, device="foo")
    g1, g2 = foo.FooGraph(), foo.FooGraph()
    with foo.stream(s1):
        g1.capture_begin(pool=handle, capture_error_mode="thread_local")
        y = x * 2
    try:
        with foo.stream(s2):
            with pytest.raises(RuntimeError, match="already being allocated to by a graph capture under way"):
                g2.capture_begin(pool=handle, capture_error_mode="thread_local")
            assert not foo.is_current_stream_capturing()
    finally:
        with foo.stream(s1):
            g1.capture_end()
    g1.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((10,), 2.0))
    assert (x + 1).sum().item() == 20.0


def test_generator_is_fixed_during_a_capture(foo):
    foo.manual_seed(7)
    state = foo.get_rng_state()
    g = foo.FooGraph()
    with foo.graph(g):
        foo.manual_seed(7)  # the seed it has: allowed, as on CUDA
        with pytest.raises(RuntimeError, match="only with the seed it has"):
            foo.manual_seed(8)
        with pytest.raises(RuntimeError, match="cannot be set during a graph capture"):
            foo.set_rng_state(state)
        out = torch.rand(1000, device="foo")
    g.replay()
    first = out.cpu()
    g.replay()
    assert not torch.equal(out.cpu(), first)  # still fresh numbers each replay
    foo.manual_seed(8)  # outside the capture: fine
    assert foo.initial_seed() == 8


def test_snapshot_during_a_capture_keeps_the_capture(foo):
    # A free waiting on another stream is pending in the allocator; a
    # snapshot taken mid-capture must not query its event (that would
    # invalidate the capture).
    s = foo.Stream()
    x = torch.ones(1000, device="foo")
    s.wait_stream(foo.current_stream())  # x is made on the current stream
    with foo.stream(s):
        foo._sleep(200)
        y = x * 2
    x.record_stream(s)
    del x
    g = foo.FooGraph()
    with foo.stream(foo.Stream()):
        g.capture_begin()
        z = y + 1
        foo.memory._snapshot()
        foo.memory_stats()
        g.capture_end()
    foo.current_stream().wait_stream(s)  # y is made on s
    g.replay()
    foo.synchronize()
    assert torch.equal(z.cpu(), torch.full((1000,), 3.0))


def test_foo_graph_takes_accelerator_graph_construction_arguments(foo):
    # torch.accelerator.Graph's pool and capture mode, given at construction,
    # apply to its `with stream, graph:` form and to a bare capture_begin().
    x = torch.ones(10, device="foo")
    handle = foo.graph_pool_handle()
    g = foo.FooGraph(pool=handle, capture_error_mode="relaxed")
    assert g.capture_error_mode == "relaxed"
    with torch.Stream("foo"), g:
        y = x + 1
    assert g.pool() == handle
    g.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((10,), 2.0))


def test_pool_whose_pinned_memory_is_still_in_use_is_refused_clearly(foo):
    x = torch.ones(10, device="foo")
    handle = foo.graph_pool_handle()
    g = foo.FooGraph()
    s = foo.Stream()
    s.wait_stream(foo.current_stream())
    with foo.stream(s):
        g.capture_begin(pool=handle, capture_error_mode="relaxed")
        pinned = torch.empty(1000, pin_memory=True)  # from the graph's private host pool
        y = x * 2
        g.capture_end()
    g.reset()
    torch.accelerator.empty_host_cache()
    with foo.stream(s):
        with pytest.raises(RuntimeError, match="still holds pinned memory"):
            g.capture_begin(pool=handle)
        assert not foo.is_current_stream_capturing()
        del pinned
        g.capture_begin(pool=handle)  # the pool can go now
        y = x * 3
        g.capture_end()
    g.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((10,), 3.0))


def test_check_input_liveness_follows_only_captured_work(foo):
    # Eager work on another device during a relaxed capture, and a sparse
    # operand: neither is an input the replay reads from outside.
    x = torch.ones(1000, device="foo:0")
    elsewhere = torch.ones(1000, device="foo:1")
    sparse = torch.eye(4, device="foo").to_sparse()
    dense = torch.ones(4, 4, device="foo")
    g = foo.FooGraph()
    with foo.graph(g, check_input_liveness=True, capture_error_mode="relaxed"):
        y = x * 2
        z = elsewhere * 3
        p = torch.sparse.mm(sparse, dense)
    foo.synchronize(1)
    del elsewhere, z
    g.replay()
    foo.synchronize()
    assert torch.equal(y.cpu(), torch.full((1000,), 2.0)) and torch.equal(p.cpu(), torch.ones(4, 4))


def test_two_threads_capture_at_once_on_their_own_streams(foo):
    # CUDA allows overlapping captures on different streams (thread_local
    # mode); each graph draws its random numbers from its own slot.
    x = torch.ones(1000, device="foo")
    foo.synchronize()
    first_began = threading.Event()
    results, errors = {}, []

    def capture(k):
        try:
            s, g = foo.Stream(), foo.FooGraph()
            with foo.stream(s):
                (x * 0).sum()  # warms the stream's allocator outside the capture
                if k == 1:
                    assert first_began.wait(10)
                g.capture_begin(capture_error_mode="thread_local")
                if k == 0:
                    first_began.set()
                y = x * (k + 2)
                r = torch.rand(1000, device="foo")
                if k == 0:
                    time.sleep(0.3)  # the other thread captures meanwhile
                g.capture_end()
                draws = []
                for _ in range(2):
                    g.replay()
                    draws.append(r.cpu().clone())
                s.synchronize()
                results[k] = (y[0].item(), draws)
        except Exception as e:  # noqa: BLE001 - reported below
            first_began.set()
            errors.append(f"{k}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=capture, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results[0][0] == 2.0 and results[1][0] == 3.0
    for first, second in (draws for _, draws in results.values()):
        assert not torch.equal(first, second)  # fresh numbers each replay
        assert 0 <= first.min() and first.max() < 1
    assert not torch.equal(results[0][1][0], results[1][1][0])

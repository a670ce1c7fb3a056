"""The stream race detector (torch.foo.race_check): the races it must find,
what a report says, and the correct patterns it must not flag."""

import inspect
import warnings

import pytest
import torch

import torch_foo

from conftest import run_python_json


def line_of(marker: str) -> int:
    """The line of this file that holds ``marker`` (in a comment)."""
    source, start = inspect.getsourcelines(inspect.getmodule(line_of))
    for i, text in enumerate(source):
        if marker in text and "line_of(" not in text:
            return start + i if start else i + 1
    raise AssertionError(marker)


def here() -> str:
    return __file__


@pytest.fixture
def race(foo):
    """torch.foo with the detector off before and after the test."""
    foo.set_race_check("off")
    foo.clear_race_reports()
    yield foo
    foo.synchronize(0)
    foo.set_race_check("off")


def test_race_error_is_a_runtime_error():
    assert issubclass(torch_foo.RaceError, RuntimeError)
    assert torch.foo.RaceError is torch_foo.RaceError


def test_side_stream_reads_default_output_without_wait_stream(race):
    s = race.Stream()
    with race.race_check("raise"):
        x = torch.ones(1 << 12, device="foo")
        x.mul_(3)  # R1-write
        with race.stream(s):
            with pytest.raises(torch_foo.RaceError) as info:
                x.sum()  # R1-read
    message = str(info.value)
    assert f"{here()}:{line_of('R1-write')}" in message
    assert f"{here()}:{line_of('R1-read')}" in message
    assert "aten::mul_" in message and "aten::sum" in message
    assert "float32[4096]" in message and "write" in message and "read" in message
    assert f"wait_stream(s)` before line {line_of('R1-read')} of {here()}" in message
    (report,) = race.race_reports()
    assert report["kind"] == "unordered"
    assert report["first"]["access"] == "write" and report["second"]["access"] == "read"
    assert report["first"]["default_stream"] and report["second"]["stream"] == s.foo_stream
    assert report["first"]["device"] == report["second"]["device"] == "foo:0"


def test_default_stream_reads_side_output_without_wait(race):
    s = race.Stream()
    with race.race_check("raise"):
        x = torch.zeros(256, device="foo")
        s.wait_stream(race.current_stream())  # x's fill comes before s's work
        with race.stream(s):
            x.add_(1)  # R2-write
        with pytest.raises(torch_foo.RaceError, match="wait_stream"):
            x * 2  # R2-read
        # The correct pattern passes.
        race.current_stream().wait_stream(s)
        assert (x * 2).sum().item() == 512


def test_two_streams_write_one_buffer(race):
    s = race.Stream()
    with race.race_check("raise"):
        x = torch.zeros(1024, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            x[:600].fill_(1)
        with pytest.raises(torch_foo.RaceError):
            x[500:].fill_(2)  # overlaps [500, 600)
        # Disjoint halves of one buffer do not race.
        x[600:].fill_(2)
    assert race.race_reports()[0]["first"]["access"] == race.race_reports()[0]["second"]["access"] == "write"


def test_strided_views_race_only_where_their_bytes_meet(race):
    # Column halves and even/odd rows interleave without sharing a byte:
    # not a race. Overlapping columns are, counted once however many rows
    # they meet in.
    s = race.Stream()
    with race.race_check("raise"):
        a, b = torch.ones(64, 64, device="foo"), torch.ones(64, 64, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            race._sleep(20)
            a[:, :32].mul_(2)
            b[0::2].add_(1)
        a[:, 32:].add_(1)
        b[1::2].mul_(3)
    assert race.race_reports() == []
    race.synchronize()
    with race.race_check("warn"), warnings.catch_warnings(record=True):
        with race.stream(s):
            a[:, :40].mul_(2)
        a[:, 24:].add_(1)
    (report,) = race.race_reports()
    assert report["count"] == 1 and report["first"]["access"] == report["second"]["access"] == "write"


def test_an_operator_the_detector_cannot_describe_leaves_it_working(race):
    # A nested tensor has no plain strides: its operators are not tracked,
    # and the host's later accesses still are.
    s = race.Stream()
    dst = torch.ones(1 << 12, device="foo")
    with race.race_check("warn"), warnings.catch_warnings(record=True):
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
        (nested * 2).values()
        pinned = torch.empty(1 << 12).pin_memory()
        with race.stream(s):
            race._sleep(20)
            pinned.copy_(dst, non_blocking=True)
        pinned.sum()
    assert [r["kind"] for r in race.race_reports()] == ["host"]
    race.synchronize()


def test_factories_of_a_tensor_read_only_its_shape(race):
    # zeros_like and the others use only shape, dtype and device, and a
    # forward on a side stream followed by backward on the default stream
    # is correct (CUDA's backward synchronizes with the forward's streams):
    # autograd's ones_like(loss) must not count as a read of loss.
    s = race.Stream()
    model = torch.nn.Linear(16, 4).to("foo")
    x = torch.randn(8, 16, device="foo")
    with race.race_check("raise"):
        a = torch.ones(1024, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            race._sleep(20)
            a.mul_(2)
            loss = model(x).square().mean()
        for make in (torch.zeros_like, torch.ones_like, torch.rand_like, torch.randn_like,
                     lambda t: torch.full_like(t, 3.0), lambda t: t.new_zeros(4), lambda t: t.new_full((4,), 2.0)):
            make(a)
        loss.backward()
        race.current_stream().wait_stream(s)
    assert race.race_reports() == []


def test_graph_replay_not_ordered_with_its_input(race):
    x = torch.ones(1000, device="foo")
    s = race.Stream()
    with race.race_check("warn"):
        g = race.FooGraph()
        with race.graph(g):
            y = x * 2  # R9-captured
        s.wait_stream(race.current_stream())
        with race.stream(s):
            x.fill_(3)  # R9-write
        g.replay()  # reads x on the default stream, not ordered after s's fill
        race.synchronize()
        (report,) = race.race_reports()
        assert report["first"]["op"].startswith("aten::fill_") and report["first"]["access"] == "write"
        assert report["second"]["op"].startswith("graph replay: aten::mul")
        assert report["second"]["access"] == "read"
        assert f"{here()}:{line_of('R9-captured')}" in report["second"]["site"]
        # Ordered, the same replay is no race; and it really read the new x.
        race.clear_race_reports()
        with race.stream(s):
            x.fill_(4)
        race.current_stream().wait_stream(s)
        g.replay()
        assert y.sum().item() == 8000
        assert race.race_reports() == []


def test_graph_output_read_on_another_stream_than_the_replay(race):
    x = torch.ones(1000, device="foo")
    s = race.Stream()
    with race.race_check("warn"):
        g = race.FooGraph()
        with race.graph(g):
            y = x * 2  # R10-captured: y comes from the graph's pool
        s.wait_stream(race.current_stream())
        with race.stream(s):
            race._sleep(20)
            g.replay()
        z = y + 1  # R10-read: on the default stream, not ordered after s's replay
        race.synchronize()
        (report,) = race.race_reports()
        assert report["first"]["op"].startswith("graph replay: aten::mul")
        assert report["first"]["access"] == "write"
        assert f"{here()}:{line_of('R10-captured')}" in report["first"]["site"]
        assert report["second"]["op"].startswith("aten::add") and report["second"]["access"] == "read"
        assert f"{here()}:{line_of('R10-read')}" in report["second"]["site"]
        # Ordered, the same read is no race.
        race.clear_race_reports()
        with race.stream(s):
            race._sleep(20)
            g.replay()
        race.current_stream().wait_stream(s)
        z = y + 1
        assert z.sum().item() == 3000
        assert race.race_reports() == []


def test_replays_of_one_graph_on_two_streams_are_ordered(race):
    # As cudaGraphLaunch orders launches of one executable graph, a replay
    # runs after the previous one whatever their streams: no race between them.
    total = torch.zeros(1000, device="foo")
    a, b = race.Stream(), race.Stream()
    with race.race_check("warn"):
        g = race.FooGraph()
        with race.graph(g):
            total.add_(1)
            out = total * 2
        a.wait_stream(race.current_stream())
        with race.stream(a):
            race._sleep(50)
            g.replay()
        with race.stream(b):
            g.replay()
        race.current_stream().wait_stream(b)
        assert out.sum().item() == 4000  # two replays in order (total 1, then 2), read after the second
        assert race.race_reports() == []


def test_free_without_record_stream_then_reuse_on_another_stream(race):
    s = race.Stream()
    n = 1 << 18  # one large block, reused at once by the next allocation of its size
    with race.race_check("raise"):
        x = torch.ones(n, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            y = x * 2  # R4-use
        address = x.data_ptr()
        del x  # no x.record_stream(s): the block goes back to the default stream at once
        with pytest.raises(torch_foo.RaceError) as info:
            z = torch.empty(n, device="foo")
            assert z.data_ptr() == address
            z.fill_(5)  # R4-reuse
    message = str(info.value)
    assert "record_stream(s)" in message
    assert f"{here()}:{line_of('R4-use')}" in message and f"{here()}:{line_of('R4-reuse')}" in message
    assert race.race_reports()[0]["kind"] == "use after free"
    del y


def test_record_stream_protects_the_free(race):
    s = race.Stream()
    n = 1 << 18
    with race.race_check("raise"):
        x = torch.ones(n, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            y = x * 2
        x.record_stream(s)
        del x
        z = torch.empty(n, device="foo")
        z.fill_(5)
        race.synchronize()
        assert y.sum().item() == 2 * n
    assert race.race_reports() == []


def test_host_overwrites_pinned_memory_before_the_copy_ran(race):
    s = race.Stream()
    src = torch.full((1 << 16,), 2.0).pin_memory()
    with race.race_check("raise"):
        with race.stream(s):
            dst = src.to("foo", non_blocking=True)  # R5-copy
        src.fill_(7)  # R5-host: the copy may not have read it yet
        with pytest.raises(torch_foo.RaceError) as info:
            race.synchronize()
    message = str(info.value)
    assert f"{here()}:{line_of('R5-copy')}" in message and f"{here()}:{line_of('R5-host')}" in message
    assert "synchronize" in message
    (report,) = race.race_reports()
    assert report["kind"] == "host" and report["second"]["device"] is None
    # A host read that runs CPU operators within CPU operators (sum calls
    # sum.dim_IntList) is one access, one report.
    race.clear_race_reports()
    with race.race_check("warn"), warnings.catch_warnings(record=True):
        pinned = torch.empty(1 << 16).pin_memory()
        with race.stream(s):
            race._sleep(20)
            pinned.copy_(dst, non_blocking=True)
        pinned.sum()
    assert [r["second"]["op"] for r in race.race_reports()] == ["aten::sum"]
    race.synchronize()
    # Synchronizing first is correct.
    race.clear_race_reports()
    with race.race_check("raise"):
        with race.stream(s):
            dst = src.to("foo", non_blocking=True)
        s.synchronize()
        src.fill_(1)
    assert race.race_reports() == []
    del dst


def test_warn_mode_warns_once_per_pair_of_sites(race):
    s = race.Stream()
    x = torch.ones(64, device="foo")
    with race.race_check("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            x.add_(1)
            with race.stream(s):
                x.sum()
    race.synchronize()
    races = [w for w in caught if "stream race" in str(w.message)]
    assert len(races) == 2  # read after write, and the next iteration's write after read
    counts = sorted(r["count"] for r in race.race_reports())
    assert counts == [2, 3]


def test_off_is_off(race):
    s = race.Stream()
    assert race.race_check_mode() == "off"
    x = torch.ones(64, device="foo")
    with race.stream(s):
        x.sum()
    x.add_(1)
    assert race.race_reports() == []
    with pytest.raises(ValueError):
        with race.race_check("sometimes"):
            pass


def test_events_across_devices_are_accepted(race):
    with race.race_check("raise"):
        with race.device(1):
            a = torch.ones(1024, device="foo:1")
            a.mul_(2)
            done = race.Event()
            done.record()
        with race.device(0):
            race.current_stream().wait_event(done)
            b = a.to("foo:0")
            race.current_stream(1).wait_stream(race.current_stream(0))
            a.add_(1)
        race.synchronize(0)
        race.synchronize(1)
    assert race.race_reports() == []
    assert b.sum().item() == 2048


def test_autograd_backward_on_a_side_stream(race):
    s = race.Stream()
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to("foo")
    x = torch.randn(16, 32, device="foo")
    with race.race_check("raise"):
        s.wait_stream(race.current_stream())
        with race.stream(s):
            loss = model(x).square().mean()
            loss.backward()
        race.current_stream().wait_stream(s)
        total = sum(p.grad.sum() for p in model.parameters())
        total.item()
    assert race.race_reports() == []


def test_optimizer_foreach_step(race):
    model = torch.nn.Linear(64, 64).to("foo")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    with race.race_check("raise"):
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(8, 64, device="foo")).sum().backward()
            opt.step()
        race.synchronize()
    assert race.race_reports() == []


def test_dataloader_pinned_copies(race):
    dataset = torch.utils.data.TensorDataset(torch.randn(64, 16), torch.arange(64))
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, pin_memory=True, pin_memory_device="foo")
    total = torch.zeros((), device="foo")
    with race.race_check("raise"):
        for features, labels in loader:
            features = features.to("foo", non_blocking=True)
            labels = labels.to("foo", non_blocking=True)
            total += features.sum() + labels.sum()
        race.synchronize()
    assert race.race_reports() == []


def _scaled(x):
    return x * 2 + 1  # one fused kernel when compiled: reads x


def _bumped(x):
    x.add_(1)  # one kernel when compiled: writes x


_compiled_scaled = torch.compile(_scaled)
_compiled_bumped = torch.compile(_bumped)


@pytest.fixture
def inductor(tmp_path_factory, monkeypatch):
    """As tests/test_compile.py's: this process's own inductor cache, kernels compiled in it."""
    import torch._dynamo
    import torch._inductor.config

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "inductor"))
    monkeypatch.setattr(torch._inductor.config, "compile_threads", 1)
    yield
    torch.foo.synchronize()
    torch._dynamo.reset()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_side_stream_read_and_write_without_wait_are_found_in_compiled_code_as_in_eager(race, inductor, compiled):
    # inductor's kernels are no operators: the wrapper declares what each
    # one reads and writes, so a missing wait_stream is found as in eager code.
    scaled, bumped = (_compiled_scaled, _compiled_bumped) if compiled else (_scaled, _bumped)
    s = race.Stream()
    warm = torch.ones(1 << 12, device="foo")
    scaled(warm), bumped(warm)  # compiled before the check
    race.synchronize()
    with race.race_check("warn"), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        x = torch.ones(1 << 12, device="foo")
        x.mul_(3)  # written on the default stream
        with race.stream(s):
            scaled(x)  # on s, without wait_stream
        y = torch.ones(1 << 12, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            bumped(y)
        y.sum()  # on the default stream, without waiting for s
        race.synchronize()
    reports = race.race_reports()
    assert len(reports) == 2, [r["message"] for r in reports]
    read, write = reports
    assert (read["first"]["access"], read["second"]["access"]) == ("write", "read")
    assert (write["first"]["access"], write["second"]["access"]) == ("write", "read")
    # Where the user's code is: this file, not the wrapper inductor generated.
    assert read["second"]["site"].startswith(f"{here()}:") and write["first"]["site"].startswith(f"{here()}:")
    if compiled:
        assert read["second"]["op"].startswith("torch.compile kernel cpp_fused")
        assert write["first"]["op"].startswith("torch.compile kernel cpp_fused")


def test_compiled_code_synchronized_right_has_no_race_and_raise_mode_refuses_the_launch(race, inductor):
    s = race.Stream()
    x = torch.ones(1 << 12, device="foo")
    _compiled_scaled(x)
    race.synchronize()
    with race.race_check("raise"):
        x = torch.ones(1 << 12, device="foo")
        s.wait_stream(race.current_stream())
        with race.stream(s):
            y = _compiled_scaled(x)
        race.current_stream().wait_stream(s)
        assert y.sum().item() == 3 * (1 << 12)
        assert race.race_reports() == []
        x.mul_(2)
        with race.stream(s), pytest.raises(torch_foo.RaceError, match="torch.compile kernel"):
            _compiled_scaled(x)
        race.synchronize()


def test_collective_not_ordered_with_its_input_or_its_reader(tmp_path):
    out = run_python_json(f"""
        import json, torch, torch.distributed as dist, torch_foo
        foo = torch.foo
        dist.init_process_group("fooccl", init_method="file://{tmp_path}/store", rank=0, world_size=1)
        out = {{}}

        def raised(fn):
            try:
                fn()
            except torch_foo.RaceError as e:
                return str(e)

        with foo.race_check("raise"):
            s = foo.Stream()
            x = torch.zeros(1024, device="foo")
            s.wait_stream(foo.current_stream())
            with foo.stream(s):
                x.add_(1)
            # On the default stream: nothing orders it after s's add_.
            out["input"] = raised(lambda: dist.all_reduce(x))
            foo.current_stream().wait_stream(s)
            dist.all_reduce(x)
            out["value"] = x.sum().item()
            out["reports"] = len(foo.race_reports())
            # gloo writes x in place on fooccl's internal stream: reading it
            # before work.wait() is a missing synchronization.
            work = dist.all_reduce(x, async_op=True)
            out["reader"] = raised(lambda: x.sum())
            foo.synchronize()
            foo.clear_race_reports()
            work = dist.all_reduce(x, async_op=True)
            work.wait()
            out["waited"] = x.sum().item()
        out["after_wait"] = len(foo.race_reports())
        dist.destroy_process_group()
        print(json.dumps(out))
    """)
    assert "aten::add_" in out["input"] and "wait_stream(s)" in out["input"]
    assert out["value"] == 1024 and out["reports"] == 1
    assert "fooccl all_reduce" in out["reader"] and "aten::sum" in out["reader"]
    assert out["waited"] == 1024 and out["after_wait"] == 0


def _collectives_under_the_detector(rank, world, store):
    import torch.distributed as dist
    from dist_harness import init

    dev = init(rank, world, store)
    foo = torch.foo
    out = {}
    with foo.race_check("warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n = 1 << 12
        t = torch.ones(n, device=dev)
        dist.all_reduce(t)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)     # gloo divides on its own thread
        dist.broadcast(t, src=0)
        flat = torch.empty(world * n, device=dev)
        dist.all_gather_into_tensor(flat, t)          # gloo copies into the output's parts
        dist.all_gather_into_tensor(flat, flat[rank * n:(rank + 1) * n])
        small = torch.empty(n, device=dev)
        dist.reduce_scatter_tensor(small, flat)
        dist.all_to_all_single(flat.clone(), flat)
        dist.all_gather([torch.empty(n, device=dev) for _ in range(world)], t)   # staged
        dist.reduce(t, dst=0)                                                    # staged
        foo.synchronize()
        out["correct"] = [r["message"] for r in foo.race_reports()]
        foo.clear_race_reports()
        # A real one: the output read before the collective is waited on.
        work = dist.all_reduce(t, async_op=True)
        t.sum()
        work.wait()
        foo.synchronize()
        out["missing_wait"] = [r["message"] for r in foo.race_reports()]
    dist.barrier()
    return out


def test_collectives_between_processes_are_race_free_and_a_missing_wait_is_not(tmp_path):
    # gloo's own threads run ATen operations on the tensors fooccl lends it
    # (a division for AVG, copies into all_gather's output): they act for
    # fooccl's kernel, not for the host, and are no race.
    from dist_harness import run_ranks

    for out in run_ranks(_collectives_under_the_detector, 2, tmp_path, timeout=90):
        assert out["correct"] == [], "\n\n".join(out["correct"])
        assert len(out["missing_wait"]) == 1 and "fooccl all_reduce" in out["missing_wait"][0]


def test_pinned_buffer_copied_out_and_back_with_to_is_ordered_and_unordered_is_found(race):
    # `p.to("foo", non_blocking=True)` reads the pinned buffer on the stream,
    # after the copy into it: no report. The same read on another stream,
    # unordered with that copy, is a race.
    a = torch.ones(1 << 16, device="foo")
    p = torch.zeros(1 << 16, pin_memory=True)
    with race.race_check("warn"):
        race._sleep(100)
        p.copy_(a, non_blocking=True)
        b = p.to("foo", non_blocking=True)
        race.synchronize()
        assert race.race_reports() == []
        assert b.sum().item() == 1 << 16
        s = race.Stream()
        s.wait_stream(race.current_stream())
        with race.stream(s):
            race._sleep(200)
            p.copy_(a * 2, non_blocking=True)  # R9-write
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p.to("foo", non_blocking=True)  # R9-read
        race.synchronize()
    (report,) = race.race_reports()
    assert report["first"]["access"] == "write" and report["second"]["access"] == "read"
    assert f"{here()}:{line_of('R9-read')}" in report["message"]

"""fooccl collectives between spawned processes: values on every rank,
NCCL's stream semantics, registration, and NCCL's argument errors.

Each test spawns one job and checks many things in it: starting a process
and importing torch costs seconds.
"""

import pytest
import torch

from conftest import held_stream
from dist_harness import init, run_ranks


def _filled(rank, shape=(4, 3), dtype=torch.float32, device=None):
    # Distinct values per rank and element, exact in every dtype used here.
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float64).reshape(shape) % 5 + 1 + rank).to(dtype).to(device)


def _collectives(rank, world, dev):
    import torch.distributed as dist

    out = {}
    out["backend"] = dist.get_backend()
    expect = [_filled(r) for r in range(world)]

    def check(name, got, want):
        assert got.device.type == "foo", name
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, msg=f"{name} on rank {rank}")

    # all_reduce: every ReduceOp gloo has, AVG, and PREMUL_SUM (applied by fooccl).
    float_ops = {
        dist.ReduceOp.SUM: sum(expect),
        dist.ReduceOp.PRODUCT: torch.stack(expect).prod(0),
        dist.ReduceOp.MIN: torch.stack(expect).min(0).values,
        dist.ReduceOp.MAX: torch.stack(expect).max(0).values,
        dist.ReduceOp.AVG: sum(expect) / world,
    }
    for op, want in float_ops.items():
        t = _filled(rank, device=dev)
        dist.all_reduce(t, op=op)
        check(f"all_reduce {op}", t, want)
    ints = [_filled(r, dtype=torch.int32) for r in range(world)]
    for op, fold in [(dist.ReduceOp.BAND, torch.bitwise_and), (dist.ReduceOp.BOR, torch.bitwise_or),
                     (dist.ReduceOp.BXOR, torch.bitwise_xor)]:
        want = ints[0]
        for x in ints[1:]:
            want = fold(want, x)
        t = _filled(rank, dtype=torch.int32, device=dev)
        dist.all_reduce(t, op=op)
        check(f"all_reduce {op}", t, want)
    # AVG on integers, as NCCL: the sum divided by the group's size, rounded
    # toward zero (gloo has none), in every reducing form.
    signed = [(_filled(r, dtype=torch.int32) - 4) * 7 for r in range(world)]
    want = torch.div(sum(signed), world, rounding_mode="trunc")
    t = signed[rank].to(dev)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    check("integer AVG all_reduce", t, want)
    t = signed[rank].to(dev)
    dist.reduce(t, dst=0, op=dist.ReduceOp.AVG)
    check("integer AVG reduce", t, want if rank == 0 else signed[rank])
    part = torch.empty(12 // world, dtype=torch.int32, device=dev)
    dist.reduce_scatter_tensor(part, signed[rank].flatten().to(dev), op=dist.ReduceOp.AVG)
    check("integer AVG reduce_scatter_tensor", part, want.flatten().chunk(world)[rank])
    a, b = signed[rank].to(dev), _filled(rank, device=dev)
    with dist._coalescing_manager(device=dev, async_ops=True) as cm:
        dist.all_reduce(a, op=dist.ReduceOp.AVG)
        dist.all_reduce(b, op=dist.ReduceOp.AVG)
    cm.wait()
    check("integer AVG coalesced", a, want)
    check("float AVG coalesced with integers", b, sum(expect) / world)
    t = _filled(rank, device=dev)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    check("all_reduce premul_sum", t, sum(expect) * 0.5)
    # 5 MiB in channels-last: gloo works on the foo memory in place.
    big = [_filled(r, shape=(5, 4, 256, 256)).contiguous(memory_format=torch.channels_last) for r in range(world)]
    t = big[rank].to(dev)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    check("channels-last all_reduce", t, sum(big) * 2)
    # Large buffers go to gloo as two halves at once: an odd number of
    # elements, each distinct, so that a misplaced half shows.
    n = (1 << 18) + 3  # 2 MiB and 24 bytes of float64
    t = (torch.arange(n, dtype=torch.float64) * (rank + 1)).to(dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check("large all_reduce", t, torch.arange(n, dtype=torch.float64) * world)

    # broadcast, reduce (only the root's tensor changes, as with NCCL).
    t = _filled(rank, device=dev)
    dist.broadcast(t, src=world - 1)
    check("broadcast", t, expect[world - 1])
    t = _filled(rank, device=dev)
    dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
    check("reduce", t, sum(expect) if rank == 0 else expect[rank])

    # all_gather (list, with a non-contiguous output, which the copies out
    # of the staging buffer fill as NCCL's do) and into one tensor.
    outs = [torch.empty(4, 3, device=dev) for _ in range(world)]
    outs[0] = torch.empty(3, 4, device=dev).t()
    dist.all_gather(outs, _filled(rank, device=dev))
    for r in range(world):
        check(f"all_gather[{r}]", outs[r], expect[r].to(outs[r].dtype))
    flat = torch.empty(world * 4, 3, device=dev)
    mine = _filled(rank, device=dev)
    dist.all_gather_into_tensor(flat, mine)
    check("all_gather_into_tensor", flat, torch.cat(expect))
    check("all_gather_into_tensor leaves its input", mine, expect[rank])
    # In place, as FSDP2 gathers: the input is this rank's part of the output.
    flat = torch.zeros(world * 4, 3, device=dev)
    flat[rank * 4:(rank + 1) * 4] = _filled(rank, device=dev)
    dist.all_gather_into_tensor(flat, flat[rank * 4:(rank + 1) * 4])
    check("all_gather_into_tensor in place", flat, torch.cat(expect))
    # An input inside the output but not at this rank's part: gathered as
    # it was before the collective wrote anything.
    buf = torch.zeros(world * 4 + 1, 3, device=dev)
    buf[1:5] = _filled(rank, device=dev)
    dist.all_gather_into_tensor(buf[:world * 4], buf[1:5])
    check("all_gather_into_tensor overlapping", buf[:world * 4], torch.cat(expect))
    # Channels-last: a tensor form sees buffers in memory order, as NCCL
    # does; the list form gathers values, whatever the layouts.
    def memory_order(t):
        return t.permute(0, 2, 3, 1).reshape(-1)
    cl = [_filled(r, shape=(1, 2, 2, 3)).contiguous(memory_format=torch.channels_last) for r in range(world)]
    cl_out = torch.empty(world, 2, 2, 3, device=dev).contiguous(memory_format=torch.channels_last)
    dist.all_gather_into_tensor(cl_out, cl[rank].to(dev))
    check("channels-last all_gather_into_tensor", memory_order(cl_out), torch.cat([memory_order(c) for c in cl]))
    outs = [torch.empty(1, 2, 2, 3, device=dev) for _ in range(world)]
    dist.all_gather(outs, cl[rank].to(dev))
    for r in range(world):
        check(f"channels-last all_gather[{r}]", outs[r], cl[r])

    # Outputs of different sizes, as NCCL accepts them: rank r gives r + 1
    # rows, and rank 0 also gives a channels-last-transposed view.
    uneven = [_filled(r, shape=(r + 1, 3)) for r in range(world)]
    outs = [torch.full((r + 1, 3), -1.0, device=dev) for r in range(world)]
    outs[0] = torch.full((3, 1), -1.0, device=dev).t()
    dist.all_gather(outs, uneven[rank].to(dev))
    for r in range(world):
        check(f"uneven all_gather[{r}]", outs[r], uneven[r])

    # gather to the last rank, scatter from the first.
    root = world - 1
    got = [torch.empty(4, 3, device=dev) for _ in range(world)] if rank == root else None
    dist.gather(_filled(rank, device=dev), got, dst=root)
    if rank == root:
        for r in range(world):
            check(f"gather[{r}]", got[r], expect[r])
    o = torch.empty(4, 3, device=dev)
    dist.scatter(o, [_filled(10 + j, device=dev) for j in range(world)] if rank == 0 else None, src=0)
    check("scatter", o, _filled(10 + rank))

    # reduce_scatter (list) and reduce_scatter_tensor.
    inputs = [_filled(rank + 10 * j, device=dev) for j in range(world)]
    o = torch.empty(4, 3, device=dev)
    dist.reduce_scatter(o, inputs)
    check("reduce_scatter", o, sum(_filled(r + 10 * rank) for r in range(world)))
    big = torch.cat([_filled(rank + 10 * j) for j in range(world)]).to(dev)
    o = torch.empty(4, 3, device=dev)
    dist.reduce_scatter_tensor(o, big, op=dist.ReduceOp.AVG)
    check("reduce_scatter_tensor avg", o, sum(_filled(r + 10 * rank) for r in range(world)) / world)
    check("reduce_scatter_tensor leaves its input", big, torch.cat([_filled(rank + 10 * j) for j in range(world)]))
    dist.reduce_scatter_tensor(o, big, op=dist._make_nccl_premul_sum(0.5))
    check("reduce_scatter_tensor premul_sum", o, sum(_filled(r + 10 * rank) for r in range(world)) * 0.5)
    check("reduce_scatter_tensor premul_sum leaves its input", big,
          torch.cat([_filled(rank + 10 * j) for j in range(world)]))
    cl_in = [_filled(r, shape=(world, 2, 2, 3)).contiguous(memory_format=torch.channels_last) for r in range(world)]
    cl_out = torch.empty(1, 2, 2, 3, device=dev).contiguous(memory_format=torch.channels_last)
    dist.reduce_scatter_tensor(cl_out, cl_in[rank].to(dev))
    part = slice(rank * 12, (rank + 1) * 12)
    check("channels-last reduce_scatter_tensor", memory_order(cl_out), sum(memory_order(c)[part] for c in cl_in))

    # all_to_all_single, even and with splits; all_to_all with lists.
    inp = torch.arange(world * 2, dtype=torch.float32, device=dev) + 100 * rank
    o = torch.empty(world * 2, device=dev)
    dist.all_to_all_single(o, inp)
    check("all_to_all_single", o, torch.tensor([100.0 * r + 2 * rank + k for r in range(world) for k in range(2)]))
    check("all_to_all_single leaves its input", inp, torch.arange(world * 2, dtype=torch.float32) + 100 * rank)
    in_splits = [r + 1 for r in range(world)]              # rank sends r+1 elements to rank r
    out_splits = [rank + 1] * world                        # and gets rank+1 from everyone
    inp = torch.full((sum(in_splits),), float(rank), device=dev)
    o = torch.empty(sum(out_splits), device=dev)
    dist.all_to_all_single(o, inp, out_splits, in_splits)
    check("all_to_all_single splits", o, torch.tensor([float(r) for r in range(world) for _ in range(rank + 1)]))
    ins = [torch.full((j + 1, 2), float(rank * 10 + j), device=dev) for j in range(world)]
    outs = [torch.empty(rank + 1, 2, device=dev) for _ in range(world)]
    dist.all_to_all(outs, ins)
    for r in range(world):
        check(f"all_to_all[{r}]", outs[r], torch.full((rank + 1, 2), float(r * 10 + rank)))

    # Point to point: blocking, async, and a batch where everyone sends first.
    peer = (rank + 1) % world
    prev = (rank - 1) % world
    if rank == 0:
        dist.send(_filled(rank, device=dev), dst=1)
    elif rank == 1:
        t = torch.empty(4, 3, device=dev)
        dist.recv(t, src=0)
        check("recv", t, expect[0])
    if rank in (0, 1):
        t = torch.empty(4, 3, device=dev)
        w_send = dist.isend(_filled(rank, device=dev), dst=1 - rank)
        w_recv = dist.irecv(t, src=1 - rank)
        w_send.wait()
        w_recv.wait()
        check("irecv", t, expect[1 - rank])
    t = torch.empty(4, 3, device=dev)
    ops = [dist.P2POp(dist.isend, _filled(rank, device=dev), peer), dist.P2POp(dist.irecv, t, prev)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check("batch_isend_irecv", t, expect[prev])

    # Collectives coalesced as FSDP and DTensor do it.
    a, b = _filled(rank, device=dev), _filled(rank, shape=(5,), device=dev)
    with dist._coalescing_manager(device=dev, async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    check("coalesced all_reduce", a, sum(expect))
    check("coalesced all_reduce", b, sum(_filled(r, shape=(5,)) for r in range(world)))
    # The group's Work (the one _coalescing_manager waits on) ends after its
    # collectives too, with point-to-point in the group, and on a device
    # other than the current one; rank 1 is late both times.
    total = float(sum(r + 1 for r in range(world)))
    x = torch.full((1 << 16,), float(rank + 1), device=dev)
    sent, got = torch.full((4,), float(rank), device=dev), torch.zeros(4, device=dev)
    if rank == 1:
        torch.foo._sleep(300)
    with dist._coalescing_manager(device=dev, async_ops=True) as cm:
        dist.all_reduce(x, async_op=True)
        dist.isend(sent, peer)
        dist.irecv(got, prev)
    cm.wait()
    check("group with point-to-point", x.clone(), torch.full((1 << 16,), total))
    check("group's receive", got, torch.full((4,), float(prev)))
    other = torch.device("foo", (dev.index + 1) % torch.foo.device_count())
    z = torch.full((1 << 16,), float(rank + 1), device=other)
    if rank == 1:
        with torch.foo.device(other):
            torch.foo._sleep(300)
    with dist._coalescing_manager(device=other, async_ops=True) as cm:
        dist.all_reduce(z, async_op=True)
    cm.wait()
    with torch.foo.device(other):
        check("group on another device", z.clone(), torch.full((1 << 16,), total))

    # A subgroup of the last two ranks, with its own numbering.
    members = [world - 2, world - 1]
    sub = dist.new_group(members)
    t = _filled(rank, device=dev)
    if rank in members:
        dist.all_reduce(t, group=sub)
        check("subgroup all_reduce", t, expect[members[0]] + expect[members[1]])
        assert dist.get_backend(sub) == "fooccl" or "fooccl" in str(dist.get_backend(sub))

    # CPU tensors still work in the same group (gloo).
    c = _filled(rank)
    dist.all_reduce(c)
    torch.testing.assert_close(c, sum(expect))

    # Complex tensors go as their real views where NCCL sends them so.
    z = [torch.full((4,), complex(r + 1, 2 * r + 1)) for r in range(world)]
    t = z[rank].to(dev)
    dist.reduce(t, dst=0)
    check("complex reduce", torch.view_as_real(t), torch.view_as_real(sum(z) if rank == 0 else z[rank]))
    # float8 moves as bytes (gloo has no such type), bit for bit.
    f8 = [_filled(r, dtype=torch.float8_e4m3fn) for r in range(world)]
    t = _filled(rank, dtype=torch.float8_e4m3fn, device=dev)
    dist.broadcast(t, src=world - 1)
    check("float8 broadcast", t.view(torch.uint8), f8[world - 1].view(torch.uint8))
    g = torch.empty(world * 4, 3, dtype=torch.float8_e5m2, device=dev)
    dist.all_gather_into_tensor(g, _filled(rank, dtype=torch.float8_e5m2, device=dev))
    check("float8 all_gather_into_tensor", g.view(torch.uint8),
          torch.cat([_filled(r, dtype=torch.float8_e5m2) for r in range(world)]).view(torch.uint8))

    # NCCL's argument errors.
    errors = {}
    for name, call in {
        "non_contiguous": lambda: dist.all_reduce(torch.zeros(3, 4, device=dev).t()),
        "gather_dtype": lambda: dist.all_gather_into_tensor(
            torch.empty(world * 4, device=dev, dtype=torch.float64), torch.zeros(4, device=dev)),
        "gather_list_dtype": lambda: dist.all_gather(
            [torch.empty(4, device=dev, dtype=torch.float64) for _ in range(world)], torch.zeros(4, device=dev)),
        "gather_own_size": lambda: dist.all_gather(
            [torch.empty(4 if r == rank else 5, device=dev) for r in range(world)], torch.zeros(5, device=dev)),
        "gather_size": lambda: dist.all_gather_into_tensor(torch.empty(world * 4 + 1, device=dev),
                                                           torch.zeros(4, device=dev)),
        "scatter_dtype": lambda: dist.reduce_scatter_tensor(torch.empty(4, device=dev),
                                                            torch.zeros(world * 4, device=dev, dtype=torch.float64)),
        "gather_devices": lambda: dist.all_gather_into_tensor(
            torch.empty(world * 4, device=torch.device("foo", (dev.index + 1) % torch.foo.device_count())),
            torch.zeros(4, device=dev)),
        # Types NCCL lacks are refused at the call, not by gloo later.
        "uint16": lambda: dist.all_gather_into_tensor(torch.empty(world * 4, device=dev, dtype=torch.uint16),
                                                      torch.zeros(4, device=dev, dtype=torch.uint16)),
        "uint32_send": lambda: dist.send(torch.zeros(4, device=dev, dtype=torch.uint32), dst=1 - rank % 2),
        "float8_sum": lambda: dist.all_reduce(torch.zeros(4, device=dev, dtype=torch.float8_e4m3fn)),
        "bool_avg": lambda: dist.all_reduce(torch.ones(4, device=dev, dtype=torch.bool), op=dist.ReduceOp.AVG),
        "complex_max": lambda: dist.reduce(torch.zeros(4, device=dev, dtype=torch.complex64), dst=0,
                                           op=dist.ReduceOp.MAX),
    }.items():
        try:
            call()
            errors[name] = None
        except (ValueError, TypeError, RuntimeError) as e:
            errors[name] = (type(e).__name__, str(e).splitlines()[0])
    out["errors"] = errors
    dist.barrier()
    return out


def _check_collectives(out):
    assert "fooccl" in out["backend"]
    e = out["errors"]
    assert e["non_contiguous"] == ("ValueError", "Tensors must be contiguous")
    assert e["gather_dtype"] == ("ValueError", "output tensor must have the same type as input tensor")
    assert e["gather_list_dtype"][0] == "ValueError" and "different dtypes" in e["gather_list_dtype"][1]
    assert e["gather_own_size"][0] == "ValueError" and "this rank's" in e["gather_own_size"][1]
    assert e["gather_size"] == (
        "ValueError", "output tensor size must be equal to world_size times input tensor size")
    assert e["scatter_dtype"] == ("ValueError", "input tensor must be the same type as the output tensor.")
    assert e["gather_devices"][0] == "ValueError" and "must be on the same device" in e["gather_devices"][1]
    assert e["uint16"] == ("TypeError", "Input tensor data type is not supported for fooccl process group: UInt16")
    assert e["uint32_send"][0] == "TypeError" and e["uint32_send"][1].endswith("UInt32")
    assert e["float8_sum"][0] == "RuntimeError" and "Float8 dtypes are not currently supported" in e["float8_sum"][1]
    assert e["complex_max"][0] == "RuntimeError" and "on complex tensors" in e["complex_max"][1]
    assert e["bool_avg"] == ("RuntimeError", "Cannot use ReduceOp.AVG with boolean inputs")


def _stream_semantics(rank, world, dev):
    import torch.distributed as dist

    foo = torch.foo
    out = {}

    # A collective is ordered after the work queued on the current stream:
    # a gate holds the fill, and the all_reduce must see it.
    t = torch.zeros(1 << 16, device=dev)
    with held_stream() as still_held:
        t.fill_(rank + 1)
        work = dist.all_reduce(t, async_op=True)
        out["returned_before_done"] = not work.is_completed()
        # wait() makes the current stream wait, not the host.
        work.wait()
        out["wait_did_not_block_host"] = not work.is_completed()
        doubled = t * 2                                # queued after the collective
        assert still_held()
    foo.synchronize()
    out["sum"] = t[:4].cpu().tolist()
    out["doubled"] = doubled[:4].cpu().tolist()
    out["completed_after_sync"] = work.is_completed() and work.is_success()

    # Work.synchronize() on another stream, then use on that stream.
    side = foo.Stream()
    t = torch.full((8,), float(rank), device=dev)
    foo._sleep(200)
    work = dist.broadcast(t, src=0, async_op=True)
    with foo.stream(side):
        work.synchronize()
        seen = t + 0
    side.synchronize()
    out["synchronized_on_side_stream"] = seen.cpu().tolist()

    # The future (what DDP's communication hooks use) has the outputs, in
    # stream order for whoever waits on it.
    t = torch.full((8,), float(rank + 1), device=dev)
    foo._sleep(200)
    fut = dist.all_reduce(t, async_op=True).get_future()
    chained = fut.then(lambda f: f.value()[0] * 10)
    out["future"] = fut.wait()[0].cpu().tolist()
    out["chained"] = chained.wait().cpu().tolist()

    # The input of a pending collective is protected from reuse, as with
    # record_stream: freeing it on the host does not let a new tensor of the
    # current stream overwrite it before the collective has read it.
    foo.synchronize()
    src = torch.full((1 << 16,), float(rank + 1), device=dev)
    gathered = torch.empty(world << 16, device=dev)
    foo._sleep(200)
    work = dist.all_gather_into_tensor(gathered, src, async_op=True)
    del src
    other = torch.full((1 << 16,), -7.0, device=dev)   # may reuse src's block only once it is safe
    work.wait()
    foo.synchronize()
    out["protected"] = [gathered[r << 16].item() for r in range(world)] + [other[0].item()]

    # The in-place reduce_scatter_tensor and all_to_all_single read their
    # input when the stream reaches them, after the fill queued behind the
    # sleeping kernel, and the reads on the current stream wait for them.
    big = torch.zeros(world * 8, device=dev)
    foo._sleep(200)
    big.fill_(rank + 1)
    part, swapped = torch.empty(8, device=dev), torch.empty(world * 8, device=dev)
    dist.reduce_scatter_tensor(part, big)
    dist.all_to_all_single(swapped, big)
    out["busy_reduce_scatter"] = part.cpu().tolist()
    out["busy_all_to_all"] = swapped.cpu().tolist()
    return out


def _check_stream_semantics(out, world):
    total = float(sum(r + 1 for r in range(world)))
    assert out["returned_before_done"], "async all_reduce waited for the stream"
    assert out["wait_did_not_block_host"], "Work.wait() blocked the host"
    assert out["sum"] == [total] * 4
    assert out["doubled"] == [2 * total] * 4
    assert out["completed_after_sync"]
    assert out["synchronized_on_side_stream"] == [0.0] * 8
    assert out["future"] == [total] * 8
    assert out["chained"] == [10 * total] * 8
    assert out["protected"] == [float(r + 1) for r in range(world)] + [-7.0]
    assert out["busy_reduce_scatter"] == [total] * 8
    assert out["busy_all_to_all"] == [float(r + 1) for r in range(world) for _ in range(8)]


def _job(rank, world, store):
    import torch.distributed as dist

    default_for_foo = dist.get_default_backend_for_device("foo")
    dev = init(rank, world, store, device_id=torch.device("foo", rank % torch.foo.device_count()))
    out = {"default_for_foo": default_for_foo, "collectives": _collectives(rank, world, dev),
           "stream": _stream_semantics(rank, world, dev)}
    dist.destroy_process_group()
    return out


def test_collectives_and_stream_semantics(tmp_path):
    world = 2
    for out in run_ranks(_job, world, tmp_path):
        assert out["default_for_foo"] == "fooccl"
        _check_collectives(out["collectives"])
        _check_stream_semantics(out["stream"], world)


def _pairing_and_reduce_rules(rank, world, store):
    import time

    import torch.distributed as dist

    foo = torch.foo
    init(rank, world, store, backend="fooccl", timeout_s=30)
    out = {}
    # A foo all_reduce, then a CPU one, with rank 1's stream busy and rank
    # 0's host late: each still pairs with its own kind on the peer.
    f = torch.full((4,), 100.0 * (rank + 1), device="foo")
    c = torch.full((4,), 1.0 * (rank + 1))
    if rank == 1:
        foo._sleep(400)
    dist.all_reduce(f)
    if rank == 0:
        time.sleep(0.2)
    dist.all_reduce(c)
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})  # CPU tensors underneath
    out["foo_then_cpu"] = (f.cpu().tolist(), c.tolist(), objects)
    # All_reduces on foo:0, then foo:1, with rank 0's foo:0 busy: the
    # exchanges follow the calls, not whichever device gets there first.
    a = torch.full((4,), 1.0 * (rank + 1), device="foo:0")
    b = torch.full((4,), 100.0 * (rank + 1), device="foo:1")
    if rank == 0:
        with foo.device(0):
            foo._sleep(400)
    dist.all_reduce(a)
    dist.all_reduce(b)
    out["two_devices"] = (a.cpu().tolist(), b.cpu().tolist())
    # NCCL's bool SUM is a logical or (MAX): bytes stay 0 or 1.
    t = torch.tensor([True, rank == 0, False], device="foo")
    dist.all_reduce(t)
    out["bool_sum_bytes"] = t.view(torch.uint8).cpu().tolist()
    errors = []
    for tensor in (torch.ones(2, dtype=torch.int64, device="foo"), torch.ones(2, dtype=torch.bool, device="foo")):
        try:
            dist.all_reduce(tensor, op=dist._make_nccl_premul_sum(0.5))
        except (TypeError, ValueError) as e:
            errors.append(f"{type(e).__name__}: {e}")
    out["premul_errors"] = errors
    dist.destroy_process_group()
    return out


@pytest.mark.slow  # spawned ranks: the quick run keeps the job above
def test_collectives_pair_in_call_order_across_devices_and_apart_from_cpu_tensors(tmp_path):
    world = 2
    for out in run_ranks(_pairing_and_reduce_rules, world, tmp_path):
        assert out["foo_then_cpu"] == ([300.0] * 4, [3.0] * 4, [{"rank": 0}, {"rank": 1}])
        assert out["two_devices"] == ([3.0] * 4, [300.0] * 4)
        assert out["bool_sum_bytes"] == [1, 1, 0]
        assert len(out["premul_errors"]) == 2
        assert out["premul_errors"][0].startswith("TypeError: PreMulSum Data type must be half, float, bfloat16 or double")
        assert out["premul_errors"][1].startswith("ValueError: Cannot use ReduceOp.PREMUL_SUM with boolean inputs")


def _split_groups(rank, world, store):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    dev = init(rank, world, store, backend="fooccl", timeout_s=30, device_id=torch.device("foo", rank))
    out = {}
    # A group bound to a device makes a mesh's groups by splitting.
    mesh = init_device_mesh("foo", (world, 1), mesh_dim_names=("dp", "tp"))
    t = torch.full((2,), float(rank + 1), device=dev)
    dist.all_reduce(t, group=mesh["dp"].get_group())
    u = torch.full((2,), float(rank + 1), device=dev)
    dist.all_reduce(u, group=mesh["tp"].get_group())
    out["mesh"] = (t.cpu().tolist(), u.cpu().tolist())
    alone = dist.split_group(split_ranks=[[r] for r in range(world)])
    v = torch.full((2,), float(rank + 1), device=dev)
    dist.all_reduce(v, group=alone)
    out["split"] = (dist.get_world_size(alone), v.cpu().tolist())
    first = dist.new_group([0])  # rank 1 is outside: torch asks its parent for a "no-color" split
    out["new_group_member"] = first != dist.GroupMember.NON_GROUP_MEMBER
    dist.destroy_process_group()
    return out


@pytest.mark.slow  # spawned ranks: the quick run keeps the job above
def test_a_group_bound_to_a_device_splits_into_meshes_and_subgroups(tmp_path):
    world = 2
    total = float(sum(r + 1 for r in range(world)))
    for rank, out in enumerate(run_ranks(_split_groups, world, tmp_path)):
        assert out["mesh"] == ([total] * 2, [float(rank + 1)] * 2)
        assert out["split"] == (1, [float(rank + 1)] * 2)
        assert out["new_group_member"] == (rank == 0)

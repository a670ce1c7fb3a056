"""fooccl when things go wrong: a rank that dies, shapes that do not match
across ranks, and what destroying the process group gives back."""

import pytest
import torch

from dist_harness import DIE, init, run_ranks

pytestmark = pytest.mark.slow  # spawned ranks; test_distributed_collectives.py keeps one job quick


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test reports what was raised
        return f"{type(e).__name__}: {e}"
    return None


def _rank_dies(rank, world, store):
    import torch.distributed as dist

    dev = init(rank, world, store, timeout_s=10)
    # This job runs with one executor thread per device: a batch in which
    # both ranks send first must still complete (fooccl queues a batch as
    # one kernel that starts every send and receive before waiting).
    got = torch.empty(1000, device=dev)
    batch = [dist.P2POp(dist.isend, torch.full((1000,), float(rank), device=dev), 1 - rank),
             dist.P2POp(dist.irecv, got, 1 - rank)]
    for w in dist.batch_isend_irecv(batch):
        w.wait()
    received = got[:3].cpu().tolist()
    t = torch.ones(16, device=dev)
    dist.all_reduce(t)
    torch.foo.synchronize()
    if rank == 1:
        return DIE                       # gone without a word, as a crash
    # The survivor's next collective fails (gloo sees the peer go, or the
    # group's timeout expires) instead of waiting forever; the error comes
    # with the first synchronization that covers it, as a kernel's would.
    def collective():  # noqa: E306
        dist.all_reduce(t)
        torch.foo.synchronize()

    error = _error_of(collective)
    # The device stays usable afterwards.
    ok = (torch.ones(3, device=dev) * 2).sum().item()
    return {"error": error, "usable": ok, "received": received}


def test_a_dead_rank_fails_the_others_within_the_timeout_and_batches_need_one_executor(tmp_path):
    out = run_ranks(_rank_dies, 2, tmp_path, timeout=60, allow_dead={1}, env={"FOO_SIM_DEVICE_EXECUTORS": "1"})
    assert out[0]["received"] == [1.0] * 3
    error = out[0]["error"]
    assert error is not None and "fooccl all_reduce failed" in error, error
    assert out[0]["usable"] == 6.0


def _mismatched(rank, world, dev):
    import torch.distributed as dist

    errors = {}
    t = torch.ones(4 * (rank + 1), device=dev)
    errors["all_reduce"] = _error_of(lambda: (dist.all_reduce(t), torch.foo.synchronize()))
    big = torch.ones((5 + rank) << 18, device=dev)
    errors["all_reduce_large"] = _error_of(lambda: (dist.all_reduce(big), torch.foo.synchronize()))
    out = torch.empty(2 * 4, device=dev)
    inp = torch.ones(4, device=dev, dtype=torch.float32 if rank == 0 else torch.float64)
    errors["all_gather_dtype"] = _error_of(
        lambda: (dist.all_gather_into_tensor(out.to(inp.dtype), inp), torch.foo.synchronize()))
    # Different operations at the same point (fingerprints of different lengths).
    x = torch.ones(4, device=dev)
    errors["different_operations"] = _error_of(lambda: (
        dist.all_reduce(x) if rank == 0 else dist.all_gather([torch.empty(4, device=dev) for _ in range(world)], x),
        torch.foo.synchronize()))
    # A failed async collective's Work keeps failing after a
    # synchronization has reported the error first, as NCCL's does.
    w = dist.all_reduce(torch.ones(4 * (rank + 1), device=dev), async_op=True)
    errors["sync_first"] = _error_of(torch.foo.synchronize)
    errors["work_after_sync"] = _error_of(w.wait)
    errors["work_success"] = w.is_success()
    # And so does a coalesced group's Work, for a collective of the group
    # (a broadcast: the manager does not fuse those into one collective).
    t = torch.ones(4 * (rank + 1), device=dev)
    with dist._coalescing_manager(device=dev, async_ops=True) as cm:
        dist.broadcast(t, src=0)
    errors["group_sync_first"] = _error_of(torch.foo.synchronize)
    errors["group_after_sync"] = _error_of(cm.wait)
    # Ranks that name different roots.
    b = torch.ones(4, device=dev)
    errors["broadcast_roots"] = _error_of(lambda: (dist.broadcast(b, src=rank), torch.foo.synchronize()))
    errors["reduce_roots"] = _error_of(lambda: (dist.reduce(b, dst=rank), torch.foo.synchronize()))
    # Ranks that disagree on the sizes of all_gather's outputs.
    outs = [torch.empty(4 + (r if rank == 1 else 0), device=dev) for r in range(world)]
    errors["uneven_all_gather"] = _error_of(
        lambda: (dist.all_gather(outs, torch.ones(outs[rank].numel(), device=dev)), torch.foo.synchronize()))
    # All-to-alls whose ranks disagree on what passes between them: rank 1
    # expects 3 elements from rank 0, which sends it 2 (gloo would abort
    # rank 1's process).
    splits_in, splits_out = ([2, 2], [2, 2]) if rank == 0 else ([2, 2], [3, 1])
    errors["all_to_all_single_splits"] = _error_of(lambda: (
        dist.all_to_all_single(torch.empty(4, device=dev), torch.ones(4, device=dev), splits_out, splits_in),
        torch.foo.synchronize()))
    errors["all_to_all_sizes"] = _error_of(lambda: (
        dist.all_to_all([torch.empty(n, device=dev) for n in splits_out],
                        [torch.ones(n, device=dev) for n in splits_in]),
        torch.foo.synchronize()))
    # Splits that do not add up to the tensor are refused at the call, as by NCCL.
    errors["all_to_all_single_sum"] = _error_of(
        lambda: dist.all_to_all_single(torch.empty(4, device=dev), torch.ones(4, device=dev), [1, 1], [2, 2]))
    # A send and a receive of different sizes, then of different dtypes,
    # alone and in a batch: the receiver fails, naming both; the data sent
    # is taken all the same, so the pair's next message arrives intact.
    def p2p(sent, received, batched):
        if batched:
            op = dist.P2POp(dist.isend, sent, 1) if rank == 0 else dist.P2POp(dist.irecv, received, 0)
            works = dist.batch_isend_irecv([op])
        else:
            works = [dist.isend(sent, 1) if rank == 0 else dist.irecv(received, 0)]
        for w in works:
            w.wait()
        torch.foo.synchronize()
    sent = torch.arange(6.0, device=dev)
    for batched in (False, True):
        for name, received in (("size", torch.empty(5, device=dev)),
                               ("dtype", torch.empty(6, device=dev, dtype=torch.int32))):
            errors[f"p2p_{name}_{'batch' if batched else 'alone'}"] = _error_of(lambda: p2p(sent, received, batched))
            after = torch.zeros(6, device=dev)
            p2p(sent, after, batched)
            errors[f"p2p_{name}_{'batch' if batched else 'alone'}_after"] = after.cpu().tolist()
    # The group still works afterwards.
    t = torch.ones(4, device=dev)
    dist.all_reduce(t)
    errors["after"] = t.cpu().tolist()
    return errors


def _staging_released(rank, world, dev):
    import torch.distributed as dist

    def held():
        # What the pinned allocator holds from the runtime once its cache is
        # emptied: only blocks still in use, or reserved for queued work.
        torch.accelerator.empty_host_cache()
        return torch.foo.host_memory_stats()["allocated_bytes.current"]

    t = torch.ones(1 << 18, device=dev)
    before = held()
    gate = torch.foo._gate()              # the collectives below stay queued
    for _ in range(3):
        # gloo works on these in place: no staging buffer.
        dist.all_reduce(t)
        dist.all_gather_into_tensor(torch.empty(world << 18, device=dev), t)
    in_place = held()
    for _ in range(3):
        # These go through staging buffers (a list of outputs; a reduce,
        # which must leave the other ranks' tensors as they were).
        dist.all_gather([torch.empty(1 << 18, device=dev) for _ in range(world)], t)
        dist.reduce(t, dst=0)
    during = held()
    gate.open()
    dist.destroy_process_group()
    after = held()
    return before, in_place, during, after


def _mismatch_then_destroy(rank, world, store):
    dev = init(rank, world, store, timeout_s=10)
    return {"mismatched": _mismatched(rank, world, dev), "staging": _staging_released(rank, world, dev)}


def test_mismatched_shapes_raise_and_destroy_releases_staging_buffers(tmp_path):
    outs = run_ranks(_mismatch_then_destroy, 2, tmp_path, timeout=60)
    for out in outs:
        errors = out["mismatched"]
        # gloo itself would abort the process: fooccl compares the ranks' sizes first.
        for op in ("all_reduce", "all_reduce_large", "all_gather_dtype", "different_operations", "broadcast_roots",
                   "reduce_roots"):
            assert errors[op] is not None and "the ranks' tensors do not match" in errors[op], errors
        assert errors["uneven_all_gather"] is not None and "the ranks' tensors do not match" in errors[
            "uneven_all_gather"], errors
        assert "the ranks' tensors do not match" in errors["sync_first"], errors["sync_first"]
        assert errors["work_after_sync"] is not None and "fooccl all_reduce failed: the ranks' tensors do not match" in (
            errors["work_after_sync"]), errors["work_after_sync"]
        assert errors["work_success"] is False
        assert "the ranks' tensors do not match" in errors["group_sync_first"], errors["group_sync_first"]
        assert errors["group_after_sync"] is not None and "fooccl broadcast failed" in errors["group_after_sync"], (
            errors["group_after_sync"])
        for op in ("all_to_all_single_splits", "all_to_all_sizes"):
            assert errors[op] is not None and (
                "rank 0 sends 2 elements to rank 1, which expects 3 from it" in errors[op]), errors[op]
        assert errors["all_to_all_single_sum"] is not None and (
            "Split sizes doesn't match total dim 0 size" in errors["all_to_all_single_sum"])
        for case in ("size_alone", "dtype_alone", "size_batch", "dtype_batch"):
            error = errors[f"p2p_{case}"]
            if out is outs[1]:  # the receiver
                assert error is not None and "rank 0 sent 6 elements of Float" in error, (case, error)
                assert "5 elements of Float" in error or "6 elements of Int" in error, (case, error)
                assert errors[f"p2p_{case}_after"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], case
            else:
                assert error is None, (case, error)
        assert errors["after"] == [2.0] * 4          # the group still works
        before, in_place, during, after = out["staging"]
        assert in_place == before     # in-place collectives take no pinned memory
        assert during > before        # queued staged collectives hold their buffers
        assert after == before        # destroy_process_group waited for them and let go

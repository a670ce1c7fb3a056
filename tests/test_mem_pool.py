"""User memory pools: torch.foo.MemPool and torch.foo.use_mem_pool, as torch.cuda's.

The allocator's exact numbers need a process nobody else allocated in, so
the scenarios run in fresh processes.
"""

import pytest
import torch

from conftest import run_python_json


def test_use_mem_pool_routes_the_calling_threads_allocations_to_the_pool():
    out = run_python_json("""
        import json, threading, torch
        foo = torch.foo
        pool, other = foo.MemPool(), foo.MemPool()
        counts = [pool.use_count()]
        outside = torch.empty(1000, device="foo")
        side = {}
        entered, allocated = threading.Event(), threading.Event()
        def side_thread():
            entered.wait()
            side["t"] = torch.empty(1000, device="foo")   # another thread: not routed
            allocated.set()
        t = threading.Thread(target=side_thread)
        t.start()
        with foo.use_mem_pool(pool):
            counts.append(pool.use_count())
            entered.set()
            inside = torch.empty(1000, device="foo")
            allocated.wait()
        t.join()
        counts.append(pool.use_count())
        def owner(x):
            return [s["segment_pool_id"] for s in foo.memory_snapshot()
                    if s["address"] <= x.data_ptr() < s["address"] + s["total_size"]][0]
        in_pool = [s["segment_pool_id"] for s in pool.snapshot()]
        address = inside.data_ptr()
        del inside
        reused_outside = torch.empty(1000, device="foo").data_ptr() == address
        with foo.use_mem_pool(pool):
            reused_inside = torch.empty(1000, device="foo").data_ptr() == address
        try:
            with foo.use_mem_pool(pool):
                raise KeyError("boom")
        except KeyError:
            pass
        counts.append(pool.use_count())
        after_error = owner(torch.empty(1000, device="foo"))
        print(json.dumps({"ids": [pool.id, other.id], "counts": counts, "outside": owner(outside),
                          "side": owner(side["t"]), "in_pool": in_pool, "reused_outside": reused_outside,
                          "reused_inside": reused_inside, "after_error": after_error,
                          "allocator": pool.allocator}))
    """)
    (z0, n0), (z1, n1) = out["ids"]
    assert z0 == z1 == 0 and n1 > n0 > 0, out["ids"]
    assert out["counts"] == [1, 2, 1, 1]
    assert out["outside"] == [0, 0] and out["side"] == [0, 0]
    assert out["in_pool"] == [out["ids"][0]]
    # A block freed in the pool serves the pool's allocations, not others'.
    assert not out["reused_outside"] and out["reused_inside"]
    assert out["after_error"] == [0, 0]
    assert out["allocator"] is None


def test_a_pools_memory_goes_back_once_the_pool_and_its_tensors_are_gone():
    out = run_python_json("""
        import gc, json, threading, torch
        foo = torch.foo
        r = foo.memory_reserved
        base = r()
        torch.empty(1 << 20, device="foo")      # freed at once: a 20 MiB segment cached in the device's pool
        cached = r()
        pool = foo.MemPool()
        with foo.use_mem_pool(pool):
            kept = torch.empty(1 << 20, device="foo")   # a 20 MiB segment of the pool
            during = r()
            foo.empty_cache()                          # inside a routing the device's cache is kept
            after_empty_inside = r()
        foo.empty_cache()                              # outside, the device's cached segment goes
        emptied = r()
        del pool
        gc.collect()
        with_tensor = r()                              # the pool's block is still kept's
        del kept
        foo.empty_cache()
        after = r()
        # Another thread inside use_mem_pool meanwhile: a deleted pool's memory still goes back.
        entered, leave = threading.Event(), threading.Event()
        def inside_other_pool():
            with foo.use_mem_pool(foo.MemPool()):
                entered.set()
                leave.wait()
        t = threading.Thread(target=inside_other_pool)
        t.start()
        entered.wait()
        pool = foo.MemPool()
        with foo.use_mem_pool(pool):
            torch.empty(1 << 20, device="foo")        # freed at once: the pool's block is free
        cached_in_pool = r()
        del pool
        gc.collect()
        released = r()
        leave.set()
        t.join()
        print(json.dumps({"base": base, "cached": cached, "during": during,
                          "after_empty_inside": after_empty_inside, "emptied": emptied,
                          "with_tensor": with_tensor, "after": after, "cached_in_pool": cached_in_pool,
                          "released": released}))
    """)
    segment = out["cached"] - out["base"]
    assert segment >= 4 << 20
    assert out["during"] == out["cached"] + segment
    assert out["after_empty_inside"] == out["during"]
    assert out["emptied"] == out["during"] - segment
    assert out["with_tensor"] == out["emptied"]       # a tensor still holds the pool's block
    assert out["after"] == out["base"]
    assert out["cached_in_pool"] == out["base"] + segment
    assert out["released"] == out["base"]              # no tensor left: returned with the pool


def test_nested_pools_route_to_the_innermost_and_no_split_keeps_blocks_whole():
    out = run_python_json("""
        import json, torch
        foo = torch.foo
        outer, inner, whole = foo.MemPool(), foo.MemPool(), foo.MemPool(no_split=True)
        with foo.use_mem_pool(outer):
            a = torch.empty(1000, device="foo")
            with foo.use_mem_pool(inner):
                b = torch.empty(1000, device="foo")
                try:
                    with foo.use_mem_pool(inner):
                        pass
                    refused = None
                except RuntimeError as e:
                    refused = str(e)
            c = torch.empty(1000, device="foo")
        def owner(x):
            return [s["segment_pool_id"] for s in foo.memory_snapshot()
                    if s["address"] <= x.data_ptr() < s["address"] + s["total_size"]][0]
        owners = [owner(a), owner(b), owner(c)]
        with foo.use_mem_pool(whole):
            d = [torch.empty(1000, device="foo") for _ in range(3)]
        with foo.use_mem_pool(outer):
            e = [torch.empty(1000, device="foo") for _ in range(3)]
        print(json.dumps({
            "outer": [len(s["blocks"]) for s in outer.snapshot()],
            "inner": len(inner.snapshot()), "refused": refused, "inner_count": inner.use_count(),
            "whole": [[b["state"] for b in s["blocks"]] for s in whole.snapshot()],
            "outer_segments": len(outer.snapshot()), "owners": owners,
            "ids": [list(outer.id), list(inner.id)]}))
    """)
    assert out["inner"] == 1
    outer_id, inner_id = out["ids"]
    assert out["owners"] == [outer_id, inner_id, outer_id]   # back to the outer pool after the inner ends
    assert "already being allocated to by a use_mem_pool" in out["refused"]
    assert out["inner_count"] == 1                    # the refused entry took no use
    # no_split: every allocation takes a whole 2 MiB segment of its own.
    assert out["whole"] == [["active_allocated"]] * 3
    # Without it, the pool's small allocations share one segment.
    assert out["outer_segments"] == 1


def test_use_on_oom_lends_a_pools_free_blocks_to_requests_the_device_cannot_serve():
    out = run_python_json("""
        import gc, json, torch
        foo = torch.foo
        def fill_to_limit():
            # The process may reserve only what it holds now: the next segment fails.
            total = foo.mem_get_info()[1]
            foo.set_per_process_memory_fraction(foo.memory_reserved() / total)
        results = {}
        for use_on_oom in (True, False):
            foo.set_per_process_memory_fraction(1.0)
            foo.empty_cache()
            pool = foo.MemPool(use_on_oom=use_on_oom)
            with foo.use_mem_pool(pool):
                address = torch.empty(5 << 20, device="foo").data_ptr()   # freed: cached in the pool
            fill_to_limit()
            try:
                results[use_on_oom] = torch.empty(5 << 20, device="foo").data_ptr() == address
            except torch.OutOfMemoryError:
                results[use_on_oom] = "oom"
            foo.set_per_process_memory_fraction(1.0)
            del pool
            gc.collect()
        # A deleted pool lends nothing, even a free block of a segment a tensor keeps.
        lender = foo.MemPool(use_on_oom=True)
        with foo.use_mem_pool(lender):
            freed = torch.empty(5 << 20, device="foo")
            keeper = torch.empty(5 << 20, device="foo")    # same 20 MiB segment: it stays
        del freed                                           # a free block of the lender
        del lender
        gc.collect()
        fill_to_limit()
        try:
            torch.empty(5 << 20, device="foo")
            deleted = "served"
        except torch.OutOfMemoryError:
            deleted = "oom"
        foo.set_per_process_memory_fraction(1.0)
        print(json.dumps({"lent": results[True], "not_lent": results[False], "deleted": deleted}))
    """)
    assert out == {"lent": True, "not_lent": "oom", "deleted": "oom"}


def test_bad_pool_arguments_raise(foo):
    with pytest.raises(ValueError, match="allocator must be None"):
        foo.MemPool(allocator=object())
    with pytest.raises(TypeError, match="expects a torch.foo.MemPool"):
        with foo.use_mem_pool(object()):
            pass
    pool = foo.MemPool()
    with pytest.raises(RuntimeError, match=r"invalid device ordinal\. The device index is out of range: 7 \("):
        with foo.use_mem_pool(pool, device=7):
            pass
    with pytest.raises(ValueError, match="foo device"):
        with foo.use_mem_pool(pool, device="cpu"):
            pass
    assert pool.use_count() == 1
    with foo.use_mem_pool(pool):
        x = torch.ones(3, device="foo")
    assert x.sum().item() == 3

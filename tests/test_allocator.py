"""The caching allocator: exact statistics, reuse, record_stream, OOM, config.

Exact numbers need an allocator nobody else touched, so most of these run
in a fresh process.
"""

import pytest
import torch

from conftest import run_python_json

MiB = 1 << 20


def test_statistics_follow_allocations_exactly():
    out = run_python_json("""
        import json, torch
        foo = torch.foo
        def snap():
            s = foo.memory_stats()
            return [s["allocated_bytes.all.current"], s["requested_bytes.all.current"],
                    s["reserved_bytes.all.current"], s["allocation.all.current"], s["segment.all.current"],
                    s["num_device_alloc"], s["num_device_free"]]
        steps = []
        a = torch.empty(1000, device="foo")              # 4000 B -> 4096, in a 2 MiB small segment
        steps.append(snap())
        b = torch.empty(3 << 20, dtype=torch.uint8, device="foo")   # 3 MiB -> a 20 MiB large segment
        steps.append(snap())
        del a
        steps.append(snap())
        foo.empty_cache()                                # the small segment goes back
        steps.append(snap())
        del b
        foo.empty_cache()
        steps.append(snap())
        s = foo.memory_stats()
        print(json.dumps({"steps": steps, "peak": s["allocated_bytes.all.peak"],
                          "small_peak": s["allocated_bytes.small_pool.peak"],
                          "freed": s["allocated_bytes.all.freed"], "reserved_api": foo.memory_reserved(),
                          "max_reserved": foo.max_memory_reserved()}))
    """)
    M = 1 << 20
    assert out["steps"] == [
        [4096, 4000, 2 * M, 1, 1, 1, 0],
        [4096 + 3 * M, 4000 + 3 * M, 22 * M, 2, 2, 2, 0],
        [3 * M, 3 * M, 22 * M, 1, 2, 2, 0],
        [3 * M, 3 * M, 20 * M, 1, 1, 2, 1],
        [0, 0, 0, 0, 0, 2, 2],
    ]
    assert out["peak"] == 4096 + 3 * M and out["small_peak"] == 4096
    assert out["freed"] == 4096 + 3 * M
    assert out["reserved_api"] == 0 and out["max_reserved"] == 22 * M


@pytest.mark.slow  # a child process training for many steps
def test_a_training_loop_reaches_a_steady_state():
    out = run_python_json("""
        import json, torch
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).foo()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(32, 64, device="foo"), torch.randint(0, 10, (32,), device="foo")
        allocs = []
        for _ in range(6):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            torch.foo.synchronize()
            allocs.append(torch.foo.memory_stats()["num_device_alloc"])
        print(json.dumps(allocs))
    """)
    assert out[2:] == [out[2]] * 4, out  # no new device allocation after warm-up


def test_out_of_memory_is_clear_and_leaves_exact_statistics():
    out = run_python_json("""
        import json, torch
        foo = torch.foo
        a = torch.empty(40 << 20, dtype=torch.uint8, device="foo")
        before = foo.memory_stats()
        try:
            torch.empty(40 << 20, dtype=torch.uint8, device="foo")
            message = None
        except torch.OutOfMemoryError as e:
            message = str(e)
        after = foo.memory_stats()
        del a
        c = torch.empty(60 << 20, dtype=torch.uint8, device="foo")   # frees the cache and retries
        final = foo.memory_stats()
        print(json.dumps({"message": message, "ooms": after["num_ooms"],
                          "same": [before[k] == after[k] for k in
                                   ("allocated_bytes.all.current", "reserved_bytes.all.current",
                                    "allocation.all.current", "segment.all.current")],
                          "retries": final["num_alloc_retries"], "allocated": foo.memory_allocated()}))
    """, env={"FOO_SIM_DEVICE_MEMORY": "64MiB"})
    assert "foo out of memory. Tried to allocate 40.00 MiB" in out["message"]
    assert "total capacity of 64.00 MiB" in out["message"]
    assert "40.00 MiB is allocated by PyTorch" in out["message"]
    assert out["ooms"] == 1 and out["same"] == [True] * 4
    assert out["retries"] >= 2 and out["allocated"] == 60 * MiB


# The scenario for a large-pool block, then for a small one (freed small
# blocks are kept aside for the next request of their size: the same rules
# must hold for them), in one fresh process: the pools share no segment, so
# the first scenario leaves the second an allocator as untouched as its own.
RECORD_STREAM = """
import json, torch
foo = torch.foo
def scenario(nbytes):
    side = {side}
    x = torch.empty(nbytes, dtype=torch.uint8, device="foo")
    ptr = x.data_ptr()
    with foo.stream(side):
        gate = foo._gate()       # side is held, as if still reading x
    {use}
    del x
    early = torch.empty(nbytes, dtype=torch.uint8, device="foo").data_ptr()
    gate.open()
    side.synchronize()
    late = torch.empty(nbytes, dtype=torch.uint8, device="foo").data_ptr()
    return [early == ptr, late == ptr]
print(json.dumps([scenario(1 << 20), scenario(4000)]))
"""


def test_record_stream_delays_reuse_until_the_streams_work_is_done():
    code = RECORD_STREAM.format(side="foo.Stream()", use="x.record_stream(side)")
    assert run_python_json(code) == [[False, True]] * 2


def test_without_record_stream_the_block_is_reused_at_once():
    # Exactly CUDA's hazard: the memory is handed out while side may still read it.
    assert run_python_json(RECORD_STREAM.format(side="foo.Stream()", use="pass")) == [[True, True]] * 2


def test_record_stream_with_a_stream_of_another_device_is_honoured():
    code = RECORD_STREAM.format(side="foo.Stream(1)", use="x.record_stream(side)")
    assert run_python_json(code) == [[False, True]] * 2


def test_a_freed_small_block_serves_its_own_stream_only_and_returns_to_the_pool():
    out = run_python_json("""
        import json, torch
        foo = torch.foo
        side = foo.Stream()
        a = torch.empty(1000, device="foo")
        b = torch.empty(1000, device="foo")
        freed = a.data_ptr()
        del a
        with foo.stream(side):
            other_stream = torch.empty(1000, device="foo").data_ptr()
        same_stream = torch.empty(1000, device="foo").data_ptr()
        # A request of another size takes its block from the pool, where the
        # freed blocks are again, merged with their free neighbours.
        del b
        big = torch.empty(3000, device="foo")
        segments = foo.memory_stats()["segment.all.current"]
        del big
        foo.empty_cache()
        print(json.dumps([other_stream != freed, same_stream == freed, segments, foo.memory_reserved()]))
    """)
    assert out == [True, True, 2, 0]  # one small segment per stream, all returned by empty_cache


def test_record_stream_needs_a_foo_stream(foo):
    x = torch.empty(4, device="foo")
    cpu_stream = torch.Stream(stream_id=0, device_index=-1, device_type=0)
    with pytest.raises(RuntimeError, match="needs a foo stream"):
        x.record_stream(cpu_stream)


def test_max_split_size_from_pytorch_alloc_conf():
    out = run_python_json("""
        import json, torch
        big = torch.empty(30 << 20, dtype=torch.uint8, device="foo")
        del big                       # a 30 MiB oversize block (>= 24 MiB), cached
        small = torch.empty(21 << 20, dtype=torch.uint8, device="foo")
        s = torch.foo.memory_stats()
        print(json.dumps([s["max_split_size"], s["segment.all.current"], s["oversize_segments.current"]]))
    """, env={"PYTORCH_ALLOC_CONF": "max_split_size_mb:24"})
    assert out == [24 * MiB, 2, 1]  # the 21 MiB request did not take the 30 MiB block


def test_memory_info_and_summary(foo):
    free, total = foo.mem_get_info()
    assert total == 8 << 30 and 0 < free <= total
    x = torch.empty(1 << 20, device="foo")
    summary = foo.memory_summary()
    assert "Allocated memory" in summary and "Reserved memory" in summary and "Segments" in summary
    assert torch.accelerator.get_memory_info(0) == foo.mem_get_info(0)
    assert foo.memory_allocated() >= 4 << 20
    foo.reset_peak_memory_stats()
    assert foo.max_memory_allocated() == foo.memory_allocated()
    foo.reset_accumulated_memory_stats()
    assert foo.memory_stats()["allocated_bytes.all.freed"] == 0
    del x


def test_torch_accelerator_memory_functions(foo):
    x = torch.empty(1 << 20, device="foo")
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == foo.memory_allocated() >= 4 << 20
    assert torch.accelerator.memory_allocated() == foo.memory_allocated()
    assert torch.accelerator.memory_reserved() == foo.memory_reserved() >= foo.memory_allocated()
    assert torch.accelerator.max_memory_allocated() >= foo.memory_allocated()
    pinned = torch.empty(1024).pin_memory()
    del pinned
    torch.accelerator.empty_host_cache()  # needs foo's host allocator (a segfault without one)
    del x
    torch.accelerator.empty_cache()
    assert foo.memory_allocated() <= stats["allocated_bytes.all.current"] - (4 << 20)


def test_kept_aside_blocks_and_their_neighbours_stay_consistent():
    # More frees than blocks kept aside, in an order where the oldest kept
    # block's neighbour is the block being freed: every block must still be
    # accounted for, merged back, and returned by empty_cache.
    out = run_python_json("""
        import json, torch
        foo = torch.foo
        for round in range(3):
            blocks = [torch.empty(1000, device="foo") for _ in range(20)]
            # Eight kept aside (1, 5, ..., 17); freeing 2 returns 1, its neighbour.
            first = [1, 5, 7, 9, 11, 13, 15, 17, 2]
            for i in first + [i for i in range(20) if i not in first]:
                blocks[i] = None
            mixed = [torch.empty(n, device="foo") for n in (1000, 3000, 1000, 700, 1000)]
            del mixed
        stats = foo.memory_stats()
        foo.empty_cache()
        print(json.dumps([stats["allocated_bytes.all.current"], stats["active.all.current"], foo.memory_reserved()]))
    """)
    assert out == [0, 0, 0]


def test_per_process_memory_fraction_limits_what_the_process_reserves(foo):
    free, total = foo.mem_get_info(1)
    assert foo.get_per_process_memory_fraction(1) == 1.0
    foo.set_per_process_memory_fraction(0.25, device=1)
    try:
        assert foo.get_per_process_memory_fraction(1) == 0.25
        assert foo.get_per_process_memory_fraction(0) == 1.0  # per device
        kept = torch.empty(int(total * 0.2) // 4, device="foo:1")
        with pytest.raises(foo.OutOfMemoryError, match="may reserve"):
            torch.empty(int(total * 0.1) // 4, device="foo:1")
        assert foo.OutOfMemoryError is torch.OutOfMemoryError
        big_on_0 = torch.empty(int(total * 0.3) // 4, device="foo:0")  # device 0 is not limited
        del big_on_0
    finally:
        foo.set_per_process_memory_fraction(1.0, device=1)
    more = torch.empty(int(total * 0.1) // 4, device="foo:1")  # allowed again
    del kept, more
    foo.empty_cache()
    with pytest.raises(ValueError, match="Allowed range"):
        foo.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError, match="must be `float`"):
        foo.set_per_process_memory_fraction(1)


def test_inactive_split_counts_free_pieces_of_shared_segments(foo):
    # Three 4 MiB tensors cut from one 20 MiB segment; freeing the middle
    # one leaves two free pieces (it, and the segment's unused tail), as
    # CUDA's allocator counts them; freeing the rest merges them back.
    foo.empty_cache()

    def split(key):
        return foo.memory_stats(1)[f"inactive_split{key}.large_pool.current"]

    a, b, c = (torch.empty(1 << 20, device="foo:1") for _ in range(3))
    assert (split(""), split("_bytes")) == (1, 8 << 20)
    del b
    assert (split(""), split("_bytes")) == (2, 12 << 20)
    del a, c
    assert (split(""), split("_bytes")) == (0, 0)
    foo.empty_cache()


def test_sizes_beyond_an_exabyte_and_negative_sizes_are_out_of_memory(foo):
    before = foo.memory_allocated()
    for make in (lambda: torch.UntypedStorage(-1, device="foo"),
                 lambda: torch.empty(4, device="foo").untyped_storage().resize_(-5)):
        with pytest.raises(torch.OutOfMemoryError, match="more than 1EB"):
            make()
    assert foo.memory_allocated() == before


def test_pinned_storage_resized_to_a_negative_size_raises_and_does_not_hang():
    # ATen's host cache would overflow rounding the size (and deadlocked).
    assert run_python_json("""
        import json, torch
        x = torch.empty(3, pin_memory=True)
        try:
            x.untyped_storage().resize_(-1)
            print(json.dumps("resized"))
        except RuntimeError as e:
            print(json.dumps("1EB" in str(e)))
    """, timeout=60) is True


def test_kernels_refuse_views_of_a_storage_shrunk_or_freed_under_them(foo):
    # FSDP frees parameters with resize_(0): a kernel on a view left behind
    # would read or write past the block, later, on the executor.
    x = torch.ones(1 << 16, device="foo")
    y = x.view(-1)
    x.untyped_storage().resize_(16)
    for call in (lambda: y + 1, lambda: y.fill_(3.0), lambda: y.sum()):
        with pytest.raises(RuntimeError, match="bytes of its storage, which has 16"):
            call()
    x.untyped_storage().resize_(0)
    with pytest.raises(RuntimeError, match="which has 0"):
        y.add_(1)
    x.untyped_storage().resize_(1 << 18)  # grown back, as FSDP does before use
    y.fill_(2.0)
    assert y.sum().item() == 2.0 * (1 << 16)


def test_torch_cuda_memory_api_names_work_on_foo(foo):
    torch.ones(1, device="foo")  # initializes the device, as the stats need
    nested = foo.memory_stats_as_nested_dict()
    flat = foo.memory_stats()
    assert nested["allocated_bytes"]["all"]["current"] == flat["allocated_bytes.all.current"]
    assert nested["num_ooms"] == flat["num_ooms"]
    with pytest.warns(FutureWarning, match="memory_reserved"):
        assert foo.memory_cached() == foo.memory_reserved()
    with pytest.warns(FutureWarning, match="max_memory_reserved"):
        assert foo.max_memory_cached() == foo.max_memory_reserved()
    assert foo.get_allocator_backend() == "native"
    pinned = torch.empty(1 << 20, dtype=torch.uint8).pin_memory()
    del pinned
    foo.reset_accumulated_host_memory_stats()
    assert foo.host_memory_stats()["allocations.allocated"] == 0
    foo.reset_peak_host_memory_stats()
    stats = foo.host_memory_stats()
    assert stats["allocated_bytes.peak"] == stats["allocated_bytes.current"]


def test_caching_allocator_alloc_and_delete_hold_a_block_by_address(foo):
    side = foo.Stream(device=1)
    before, before_0 = foo.memory_allocated(1), foo.memory_allocated(0)
    ptr = foo.caching_allocator_alloc(3 << 20, device=1, stream=side)
    assert ptr != 0 and foo.memory_allocated(1) - before == 3 << 20
    assert foo.memory_allocated(0) == before_0  # on the stream's device only
    foo.caching_allocator_delete(ptr)
    assert foo.memory_allocated(1) == before
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        foo.caching_allocator_delete(ptr)
    assert foo.caching_allocator_alloc(0) == 0
    with pytest.raises(ValueError, match="not on the requested device foo:0"):
        foo.caching_allocator_alloc(16, device=0, stream=side)
    with pytest.raises(TypeError, match="foo stream"):
        foo.caching_allocator_alloc(16, stream=torch.Stream("cpu"))

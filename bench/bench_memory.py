"""Allocation of small tensors and copy bandwidth between host and device."""

import torch

from common import ratio, row, seconds, synced
from cpu_side import cpu_workload

MiB = 1 << 20


def allocation_work(device: str):
    # The same call on both sides, as device-agnostic code makes it: with
    # the device named (parsing a device argument costs CPU PyTorch a third
    # of an allocation, so leaving it out on one side only would not compare
    # the allocators).
    def run() -> None:
        for _ in range(100):
            torch.empty(1000, device=device)
    return run


def allocation() -> list[dict]:
    return [row("allocate+free 1000-float tensor (x100)",
                *ratio(allocation_work("foo"), cpu_workload("bench_memory", "allocation_work"), repeat=50), "<= 1.1x")]


def host_copy_work(_device: str, size: int = 64 * MiB):
    """A plain host copy of the size the copy rows move: their bound."""
    src, dst = torch.randn(size // 4), torch.empty(size // 4)
    return lambda: dst.copy_(src)


def copies(size: int = 64 * MiB) -> list[dict]:
    n = size // 4
    pageable, pinned = torch.randn(n), torch.randn(n).pin_memory()
    host_dst, pinned_dst = torch.empty(n), torch.empty(n).pin_memory()
    device = torch.empty(n, device="foo")
    memcpy = cpu_workload("bench_memory", "host_copy_work")
    results = []
    cases = [
        ("host->device copy 64 MiB, pageable", lambda: device.copy_(pageable)),
        ("host->device copy 64 MiB, pinned", lambda: device.copy_(pinned, non_blocking=True)),
        ("device->host copy 64 MiB, pageable", lambda: host_dst.copy_(device)),
        ("device->host copy 64 MiB, pinned", lambda: pinned_dst.copy_(device, non_blocking=True)),
    ]
    for name, fn in cases:
        foo_s, cpu_s, r = ratio(synced(fn), memcpy, repeat=5)
        gbps = size / foo_s / 1e9
        results.append(row(f"{name} ({gbps:.1f} GB/s)", foo_s, cpu_s, r, "<= 1.05x"))
    return results


def device_copies(size: int = 64 * MiB) -> list[dict]:
    """Copies between foo tensors, on one device and across two, against
    the same copy_ between CPU tensors."""
    n = size // 4
    src = torch.randn(n, device="foo:0")
    same, other = torch.empty(n, device="foo:0"), torch.empty(n, device=f"foo:{min(1, torch.foo.device_count() - 1)}")

    memcpy = cpu_workload("bench_memory", "host_copy_work")

    def across() -> None:
        other.copy_(src)
        torch.foo.synchronize(other.device)

    return [row("device->device copy 64 MiB, one device", *ratio(synced(lambda: same.copy_(src)), memcpy, repeat=5),
                "<= 1.05x"),
            row("device->device copy 64 MiB, foo:0 -> foo:1", *ratio(across, memcpy, repeat=5), "<= 1.05x")]


def copy_overlaps_compute(size: int = 64 * MiB) -> dict:
    """A non_blocking pinned copy on one stream and a matmul chain on
    another, against the two one after the other (one intra-op thread).
    The chain is sized to take as long as the copy, so that perfect overlap
    is 0.5x: with a fixed chain a third of the copy's time, the best two
    streams could do was 0.76x."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pinned = torch.randn(size // 4).pin_memory()
        device = torch.empty(size // 4, device="foo")
        a = torch.randn(384, 384, device="foo")
        copy_stream, compute_stream = torch.foo.Stream(), torch.foo.Stream()

        def copy() -> None:
            device.copy_(pinned, non_blocking=True)

        copy_s = seconds(synced(copy), 5)
        matmul_s = seconds(synced(lambda: a @ a), 20)
        matmuls = max(1, round(copy_s / matmul_s))

        def compute() -> None:
            for _ in range(matmuls):
                a @ a

        def overlapped() -> None:
            with torch.foo.stream(copy_stream):
                copy()
            with torch.foo.stream(compute_stream):
                compute()
            torch.foo.synchronize()

        def serial() -> None:
            with torch.foo.stream(copy_stream):
                copy()
                compute()
            torch.foo.synchronize()

        both_s, serial_s, r = ratio(overlapped, serial, repeat=3)
    finally:
        torch.set_num_threads(threads)
    return row(f"pinned host->device copy 64 MiB and as long a chain of {matmuls} matmuls: two streams vs one "
               "(1 thread)", both_s, serial_s, r, "<= 0.6x (of one stream)")


def run() -> list[dict]:
    return allocation() + copies() + device_copies() + [copy_overlaps_compute()]

"""Allocation of small tensors and copy bandwidth between host and device."""

import torch

from common import ratio, row, synced

MiB = 1 << 20


def allocation() -> list[dict]:
    # The same call on both sides, as device-agnostic code makes it: with
    # the device named (parsing a device argument costs CPU PyTorch a third
    # of an allocation, so leaving it out on one side only would not compare
    # the allocators).
    def allocating_on(device: str):
        def run() -> None:
            for _ in range(100):
                torch.empty(1000, device=device)
        return run

    return [row("allocate+free 1000-float tensor (x100)", *ratio(allocating_on("foo"), allocating_on("cpu"), repeat=50),
                "<= 1.1x")]


def copies(size: int = 64 * MiB) -> list[dict]:
    n = size // 4
    pageable, pinned = torch.randn(n), torch.randn(n).pin_memory()
    host_dst, pinned_dst = torch.empty(n), torch.empty(n).pin_memory()
    device = torch.empty(n, device="foo")

    def memcpy() -> None:  # a plain host copy of the same size: the bound
        host_dst.copy_(pageable)

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
        results.append(row(f"{name} ({gbps:.1f} GB/s)", foo_s, cpu_s, r))
    return results


def run() -> list[dict]:
    return allocation() + copies()

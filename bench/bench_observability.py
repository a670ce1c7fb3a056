"""The cost of looking: the small-op chain under torch.profiler with foo
activity, and allocation with memory history recorded, each against the
same foo code unobserved (the CPU column is foo with observation off)."""

import torch
from torch.profiler import ProfilerActivity, profile

from common import ratio, row, synced


def profiled_chain() -> dict:
    x = torch.ones(1000, device="foo")

    def chain() -> None:
        for _ in range(10_000):
            x.mul_(1.0001)

    def profiled() -> None:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
            chain()
            torch.foo.synchronize()

    on_s, off_s, r = ratio(profiled, synced(chain), repeat=1, rounds=5)
    return row("chain of 10,000 in-place ops, profiled (CPU + foo activity) vs not (CPU column = foo unprofiled)",
               on_s, off_s, r, "<= 1.5x")


def recorded_allocation() -> dict:
    def alloc() -> None:
        for _ in range(100):
            torch.empty(1000, device="foo")

    def recorded() -> None:
        torch.foo.memory._record_memory_history("all", stacks="python", max_entries=100_000)
        try:
            alloc()
        finally:
            torch.foo.memory._record_memory_history(None)

    on_s, off_s, r = ratio(recorded, alloc, repeat=50)
    return row("allocate+free 1000-float tensor (x100), memory history with Python stacks vs off "
               "(CPU column = foo, history off)", on_s, off_s, r, "<= 3x")


def run() -> list[dict]:
    return [profiled_chain(), recorded_allocation()]

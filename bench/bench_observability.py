"""The cost of looking: the small-op chain under torch.profiler with foo
activity, allocation with memory history recorded, and the MLP training
step with the stream race detector on, each against the same foo code
unobserved (the CPU column is foo with observation off)."""

import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from common import ratio, row, seconds


def profiled_chain() -> dict:
    """The chain's run time while a profile records it (launches, kernels,
    their timestamps), against the same chain unprofiled. What the profile
    does once it stops (torch turning every event into Python objects) is
    not on that path; the row's name reports it separately."""
    x = torch.ones(1000, device="foo")

    def chain() -> None:
        for _ in range(10_000):
            x.mul_(1.0001)
        torch.foo.synchronize()

    chain()
    on, off, ratios, stops = [], [], [], []
    for _ in range(5):
        off.append(seconds(chain, 1))
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
        prof.__enter__()
        on.append(seconds(chain, 1))
        start = time.perf_counter()
        prof.__exit__(None, None, None)
        stops.append(time.perf_counter() - start)
        ratios.append(on[-1] / off[-1])
    stop_ms = statistics.median(stops) * 1e3
    return row(f"chain of 10,000 in-place ops while profiled with foo activity (then {stop_ms:.0f} ms to stop "
               "the profile) vs not; CPU column = foo unprofiled",
               statistics.median(on), statistics.median(off), statistics.median(ratios), "<= 1.5x")


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


def race_checked_training_step() -> dict:
    """The MLP benchmark's training step with torch.foo.race_check("warn") on
    (every launch declares and checks its memory) against the same step with
    the detector off, interleaved."""
    from bench_training import _step, mlp

    model = mlp().foo()
    step = _step(model, torch.optim.SGD(model.parameters(), lr=0.01), torch.randn(64, 512).foo(),
                 torch.randint(0, 10, (64,)).foo())

    def off() -> None:
        step()
        torch.foo.synchronize()

    def on() -> None:
        torch.foo.set_race_check("warn")
        try:
            step()
            torch.foo.synchronize()
        finally:
            torch.foo.set_race_check("off")

    on_s, off_s, r = ratio(on, off, repeat=5)
    assert torch.foo.race_reports() == [], torch.foo.race_reports()
    return row("MLP training step with the race detector on vs off (CPU column = foo, detector off)",
               on_s, off_s, r, "<= 2x")


def run() -> list[dict]:
    return [profiled_chain(), recorded_allocation(), race_checked_training_step()]

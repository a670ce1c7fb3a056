"""Timing helpers: every figure is a ratio of foo to CPU PyTorch measured in
the same run, interleaved, so that a busy machine slows both alike."""

import statistics
import time
from typing import Callable

import torch

# After its last parallel region, an OpenMP (libgomp) team keeps its worker
# threads spinning for about 10 ms (measured here: 8 to 11 ms of CPU). foo's
# kernels run on executor threads, each the master of a team of its own, and
# CPU's operators on the calling thread's team; timed back to back, the side
# timed second would share the cores with the other side's spinning workers.
# Each side starts after this pause instead.
SETTLE_S = 0.02


def seconds(fn: Callable[[], None], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def _timed(fn, repeat: int) -> float:
    # A workload of the CPU process (cpu_side.py) is timed there.
    return fn.seconds(repeat) if hasattr(fn, "seconds") else seconds(fn, repeat)


def ratio_rounds(foo_fn: Callable[[], None], cpu_fn: Callable[[], None], repeat: int,
                 rounds: int = 7) -> tuple[list[float], list[float], list[float]]:
    """Per round: foo seconds, CPU seconds and their ratio, the two sides
    timed one after the other. Either side may be a workload of the CPU
    process (cpu_side.py)."""
    foo_fn(), cpu_fn()  # warm up caches, pools and the runtime
    foo_times, cpu_times, ratios = [], [], []
    for _ in range(rounds):
        time.sleep(SETTLE_S)
        f = _timed(foo_fn, repeat)
        time.sleep(SETTLE_S)
        c = _timed(cpu_fn, repeat)
        foo_times.append(f)
        cpu_times.append(c)
        ratios.append(f / c)
    return foo_times, cpu_times, ratios


def ratio(foo_fn: Callable[[], None], cpu_fn: Callable[[], None], repeat: int, rounds: int = 7) -> tuple[float, float, float]:
    """(median foo seconds, median CPU seconds, median of per-round ratios)."""
    foo_times, cpu_times, ratios = ratio_rounds(foo_fn, cpu_fn, repeat, rounds)
    return statistics.median(foo_times), statistics.median(cpu_times), statistics.median(ratios)


def synced(fn: Callable[[], None]) -> Callable[[], None]:
    """fn followed by a synchronization of the current foo device."""

    def run() -> None:
        fn()
        torch.foo.synchronize()

    return run


def row(name: str, foo_s: float, cpu_s: float, r: float, target: str = "") -> dict:
    return {"benchmark": name, "foo": foo_s, "cpu": cpu_s, "ratio": r, "target": target}

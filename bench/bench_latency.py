"""Small operators with host reads, as a library's unit tests run them: the
time from a call to its answer on the host, foo against CPU PyTorch.

Each workload reads something back (`.item()`, a data-dependent shape), so
each repetition waits for the device: what is timed is latency, not
throughput.

Run alone (`python bench/bench_latency.py [--rounds N]`) it prints each
row's median with the lowest and highest ratio of its rounds.
"""

import argparse
import statistics
import sys

import torch

from common import ratio_rounds, row
from cpu_side import cpu_workload

ROUNDS = 7


def unit_test_loop_work(device: str):
    """A unit test's shape: a few small operators, a host read, repeated;
    then one backward and a read of the loss."""
    torch.manual_seed(0)
    x = torch.randn(64, 64, device=device)
    w = torch.randn(64, 64, device=device, requires_grad=True)

    def run() -> None:
        w.grad = None
        loss = 0
        for _ in range(20):
            h = (x @ w).relu()
            loss = loss + h.sum()
            z = torch.softmax(h, dim=1)
            z.max().item()
            torch.nonzero(z > z.mean())
        loss.backward()
        loss.item()
    return run


def _vector(device: str) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(64, device=device)


def item_work(device: str):
    v = _vector(device)
    return lambda: v.sum().item()


def nonzero_work(device: str):
    v = _vector(device)
    return lambda: torch.nonzero(v > 0)


def unique_work(device: str):
    v = _vector(device)
    return lambda: torch.unique(v)


def masked_select_work(device: str):
    v = _vector(device)
    return lambda: torch.masked_select(v, v > 0)


def bool_index_work(device: str):
    v = _vector(device)
    return lambda: v[v > 0]


# (name, factory, repetitions per round, target)
WORKLOADS = [
    ("20 x (64x64 matmul, relu, sum, softmax, .max().item(), nonzero), backward, .item()", "unit_test_loop_work",
     20, "<= 1.5x"),
    ("v.sum().item() on 64 floats", "item_work", 2000, "<= 2x"),
    ("torch.nonzero(v > 0) on 64 floats", "nonzero_work", 1000, "<= 2.5x"),
    ("torch.unique(v) on 64 floats", "unique_work", 1000, "<= 2.5x"),
    ("torch.masked_select(v, v > 0) on 64 floats", "masked_select_work", 1000, "<= 2.5x"),
    ("v[v > 0] on 64 floats", "bool_index_work", 1000, "<= 2.5x"),
]


def measure(factory: str, repeat: int, rounds: int) -> tuple[float, float, list[float]]:
    """(median foo seconds, median CPU seconds, the per-round ratios), the
    two sides timed in alternation, CPU in its own process."""
    foo_fn = globals()[factory]("foo")
    cpu_fn = cpu_workload("bench_latency", factory)
    for _ in range(2):  # and ratio_rounds' own: the fallback's meta results need more than one call
        foo_fn(), cpu_fn()
    foo_times, cpu_times, ratios = ratio_rounds(foo_fn, cpu_fn, repeat, rounds)
    return statistics.median(foo_times), statistics.median(cpu_times), ratios


def run(rounds: int = ROUNDS) -> list[dict]:
    rows = []
    for name, factory, repeat, target in WORKLOADS:
        foo_s, cpu_s, ratios = measure(factory, repeat, rounds)
        rows.append(row(name, foo_s, cpu_s, statistics.median(ratios), target))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--only", default=None, help="a factory name: time that workload alone")
    args = parser.parse_args()
    print(f"| workload | foo | CPU | foo/CPU | rounds' range | target |  ({torch.get_num_threads()} threads, "
          f"{args.rounds} rounds)")
    print("|---|---|---|---|---|---|")
    for name, factory, repeat, target in WORKLOADS:
        if args.only and factory != args.only:
            continue
        foo_s, cpu_s, ratios = measure(factory, repeat, args.rounds)
        print(f"| {name} | {foo_s * 1e6:,.1f} us | {cpu_s * 1e6:,.1f} us | {statistics.median(ratios):.2f}x | "
              f"{min(ratios):.2f}-{max(ratios):.2f}x | {target} |", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    main()

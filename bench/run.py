"""Runs every benchmark and prints a Markdown table of foo/CPU ratios.

By default each suite runs twice: at torch's default number of threads
(how users run) and at one thread; the target applies to the first.

Usage: python bench/run.py [--threads N]   (N: one pass, at N threads)
"""

import argparse
import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SUITES = ["bench_memory", "bench_compute", "bench_training", "bench_graphs", "bench_compile", "bench_observability"]


def run_suites(threads: int) -> list[dict]:
    torch.set_num_threads(threads)
    rows = []
    for name in SUITES:
        rows.extend(importlib.import_module(name).run())
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=None, help="one pass, torch.set_num_threads(N) for both sides")
    args = parser.parse_args()
    passes = [args.threads] if args.threads else [torch.get_num_threads(), 1]
    results = [run_suites(n) for n in passes]
    heads = " | ".join(f"foo/CPU, {n} thread{'s' if n > 1 else ''}" for n in passes)
    print(f"| benchmark | foo | CPU | {heads} | target |")
    print("|---|---|---|" + "---|" * len(passes) + "---|")
    # Rows pair up by position: names may carry measured figures.
    for r, *same in zip(*results):
        ratios = [f"{x['ratio']:.2f}x" for x in [r, *same]]
        print(f"| {r['benchmark']} | {r['foo'] * 1e3:.3f} ms | {r['cpu'] * 1e3:.3f} ms | {' | '.join(ratios)} | {r['target']} |")


if __name__ == "__main__":
    main()

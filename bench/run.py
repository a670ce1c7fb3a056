"""Runs every benchmark and prints a Markdown table of foo/CPU ratios.

Usage: python bench/run.py [--threads N]
"""

import argparse
import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SUITES = ["bench_memory", "bench_compute", "bench_training", "bench_graphs", "bench_compile", "bench_observability"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads for both sides")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for name in SUITES:
        rows.extend(importlib.import_module(name).run())
    print("| benchmark | foo | CPU | foo/CPU | target |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['benchmark']} | {r['foo'] * 1e3:.3f} ms | {r['cpu'] * 1e3:.3f} ms | {r['ratio']:.2f}x | {r['target']} |")


if __name__ == "__main__":
    main()

"""F.scaled_dot_product_attention on foo against CPU PyTorch's own SDPA (its
flash kernel), batch 4, 8 heads, head dim 64, float32, forward and
forward+backward, causal and not, at sequence lengths 256 to 4096; and the
device memory one call at length 2048 holds beyond its inputs.

Each row is the median of interleaved rounds (common.ratio); "rounds" gives
the lowest and highest ratio of a single round, the spread a loaded machine
puts on them.

Usage: python bench/bench_attention.py [--lengths 256,1024] [--rounds N] [--dropout] [--math]
(not part of bench/run.py: at 4096 one forward+backward takes seconds).
--math times foo's math kernel instead of its fused one (foo before it had one).
"""

import argparse
import contextlib
import functools
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ratio_rounds, row, synced  # noqa: E402
from cpu_side import cpu_workload  # noqa: E402

BATCH, HEADS, HEAD_DIM = 4, 8, 64
LENGTHS = [256, 512, 1024, 2048, 4096]


# --math: foo's side takes the math kernel, as foo did before its fused one.
FOO_BACKENDS: list = []


def attention_work(device: str, length: int, causal: bool, backward: bool, dropout_p: float = 0.0):
    torch.manual_seed(0)
    q, k, v = (torch.randn(BATCH, HEADS, length, HEAD_DIM, device=device, requires_grad=backward) for _ in range(3))
    grad = torch.randn(BATCH, HEADS, length, HEAD_DIM, device=device)
    def run() -> None:
        with sdpa_kernel(FOO_BACKENDS) if device == "foo" and FOO_BACKENDS else contextlib.nullcontext():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=dropout_p)
        if backward:
            out.backward(grad)
    return run


def _name(length: int, causal: bool, backward: bool) -> str:
    return f"attention_{length}_{'causal' if causal else 'full'}_{'fwd_bwd' if backward else 'fwd'}"


# The CPU process builds a workload by module and factory name (cpu_side.py).
for _length in LENGTHS:
    for _causal in (True, False):
        for _backward in (False, True):
            globals()[_name(_length, _causal, _backward)] = functools.partial(
                attention_work, length=_length, causal=_causal, backward=_backward)
# Training with attention dropout: CPU's flash kernel has none, so CPU takes math.
attention_1024_causal_dropout = functools.partial(attention_work, length=1024, causal=True, backward=True,
                                                  dropout_p=0.1)


def compare(name: str, factory: str, repeat: int, rounds: int) -> dict:
    """`factory` on foo against the same in the CPU process, with the spread of its rounds."""
    foo_times, cpu_times, ratios = ratio_rounds(synced(globals()[factory]("foo")),
                                                cpu_workload("bench_attention", factory), repeat=repeat,
                                                rounds=rounds)
    r = row(name, statistics.median(foo_times), statistics.median(cpu_times), statistics.median(ratios), "<= 1.1x")
    r["rounds"] = f"{min(ratios):.2f}–{max(ratios):.2f}x"
    return r


def timing_row(length: int, causal: bool, backward: bool, rounds: int) -> dict:
    what = "forward+backward" if backward else "forward"
    return compare(f"SDPA {what}, length {length}, {'causal' if causal else 'not causal'}",
                   _name(length, causal, backward), max(1, 2048 // length) if length < 2048 else 1, rounds)


def dropout_row(rounds: int) -> dict:
    return compare("SDPA forward+backward, length 1024, causal, dropout 0.1 (CPU: math)",
                   "attention_1024_causal_dropout", 1, rounds)


def extra_memory_row(length: int = 2048) -> dict:
    """Peak device memory of one causal forward beyond its inputs, against the
    output's size (the math kernel would hold B*H*L*L attention weights)."""
    q, k, v = (torch.randn(BATCH, HEADS, length, HEAD_DIM, device="foo") for _ in range(3))
    torch.foo.synchronize()
    torch.foo.reset_peak_memory_stats()
    before = torch.foo.memory_allocated()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.foo.synchronize()
    extra = torch.foo.max_memory_allocated() - before
    output = out.numel() * out.element_size()
    return {"benchmark": f"SDPA forward, length {length}, causal: peak extra device memory {extra / 2**20:.1f} MiB, "
                         f"output {output / 2**20:.1f} MiB",
            "foo": extra, "cpu": output, "ratio": extra / output, "target": "<= 2x (of the output)", "rounds": "-"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--math", action="store_true", help="foo's side takes the math kernel")
    parser.add_argument("--dropout", action="store_true", help="also the dropout row")
    args = parser.parse_args()
    if args.math:
        FOO_BACKENDS.append(SDPBackend.MATH)
    print(f"{torch.get_num_threads()} threads")
    print("| benchmark | foo | CPU | foo/CPU | rounds | target |")
    print("|---|---|---|---|---|---|")
    with sdpa_kernel(FOO_BACKENDS) if FOO_BACKENDS else contextlib.nullcontext():
        m = extra_memory_row()
    rows = (functools.partial(timing_row, length, causal, backward, args.rounds)
            for length in map(int, args.lengths.split(",")) for backward in (False, True) for causal in (True, False))
    for measure in [*rows, *([functools.partial(dropout_row, args.rounds)] if args.dropout else [])]:
        r = measure()
        print(f"| {r['benchmark']} | {r['foo'] * 1e3:.1f} ms | {r['cpu'] * 1e3:.1f} ms | {r['ratio']:.2f}x | "
              f"{r['rounds']} | {r['target']} |", flush=True)
    print(f"| {m['benchmark']} | | | {m['ratio']:.2f}x | - | {m['target']} |")


if __name__ == "__main__":
    main()

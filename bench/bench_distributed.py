"""fooccl against gloo between two processes on this machine: a 64 MiB
all_reduce and a DDP training step of the MLP benchmark, foo against CPU.

Both ranks join one process group, "cpu:gloo,foo:fooccl": CPU tensors go
to gloo directly, foo tensors through fooccl (which uses the same kind of
gloo group underneath), so the ratio is fooccl's overhead over its
transport: the hand-over to the internal stream and its executor, the
signature check (gloo works on the foo memory in place for both).

Usage: python bench/bench_distributed.py (not part of bench/run.py: it
starts two processes).
"""

import multiprocessing
import os
import sys
import tempfile
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

WORLD = 2


def _rank(rank: int, store: str, results) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from bench_training import _step, mlp
    from common import ratio, row, synced

    torch.set_num_threads(1)  # two ranks share the machine's cores
    device = torch.device("foo", rank % torch.foo.device_count())
    torch.foo.set_device(device)
    dist.init_process_group("cpu:gloo,foo:fooccl", init_method=f"file://{store}", rank=rank, world_size=WORLD,
                            timeout=timedelta(seconds=120))
    rows = []

    numel = 64 * 1024 * 1024 // 4
    foo_t = torch.ones(numel, device=device)
    cpu_t = torch.ones(numel)
    rows.append(row("all_reduce 64 MiB float32, 2 processes (foo: fooccl, CPU: gloo)",
                    *ratio(synced(lambda: dist.all_reduce(foo_t)), lambda: dist.all_reduce(cpu_t), repeat=3, rounds=5),
                    "<= 1.15x"))

    torch.manual_seed(0)
    model = mlp()
    foo_model = DDP(mlp().to(device))
    foo_model.module.load_state_dict(model.state_dict())
    cpu_model = DDP(model)
    x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
    foo_step = _step(foo_model, torch.optim.SGD(foo_model.parameters(), lr=0.01), x.to(device), y.to(device))
    cpu_step = _step(cpu_model, torch.optim.SGD(cpu_model.parameters(), lr=0.01), x, y)
    rows.append(row("DDP MLP training step (SGD, batch 64 per rank), 2 processes",
                    *ratio(synced(foo_step), cpu_step, repeat=5, rounds=5), "<= 1.15x"))
    dist.destroy_process_group()
    if rank == 0:
        results.put(rows)


def run() -> list[dict]:
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_rank, args=(r, os.path.join(tmp, "store"), results)) for r in range(WORLD)]
        for p in procs:
            p.start()
        rows = results.get(timeout=600)
        for p in procs:
            p.join(timeout=60)
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"| {r['benchmark']} | {r['foo'] * 1e3:.3f} ms | {r['cpu'] * 1e3:.3f} ms | {r['ratio']:.2f}x | {r['target']} |")

"""Operators on foo against the same operators on CPU PyTorch."""

import torch

from common import ratio, row, synced
from cpu_side import cpu_workload


def chain_work(device: str):
    x = torch.ones(1000, device=device)

    def run() -> None:
        for _ in range(10_000):
            x.mul_(1.0001)
    return run


def small_op_chain() -> dict:
    foo_s, cpu_s, r = ratio(synced(chain_work("foo")), cpu_workload("bench_compute", "chain_work"), repeat=1, rounds=5)
    return row("chain of 10,000 in-place ops on 1,000 floats, then synchronize", foo_s, cpu_s, r,
               "<= 1.1x (every one of 5 runs)")


def matmul_work(device: str):
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024).to(device), torch.randn(1024, 1024).to(device)
    return lambda: a @ b


def matmul() -> dict:
    return row("1024x1024 float32 matmul",
               *ratio(synced(matmul_work("foo")), cpu_workload("bench_compute", "matmul_work"), repeat=5), "<= 1.1x")


def _inference(model: torch.nn.Module, x: torch.Tensor, device: str):
    model, x = model.to(device).eval(), x.to(device)

    def run() -> None:
        with torch.no_grad():
            model(x)
    return run


def mlp_forward_work(device: str):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    return _inference(model, torch.randn(64, 512), device)


def transformer_forward_work(device: str):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return _inference(model, torch.randn(8, 64, 128), device)


def _forward(name: str, factory: str) -> dict:
    foo_fn = synced(globals()[factory]("foo"))
    return row(name, *ratio(foo_fn, cpu_workload("bench_compute", factory), repeat=10), "<= 1.1x")


def mlp_forward() -> dict:
    return _forward("MLP forward (batch 64, 512-1024-1024-10)", "mlp_forward_work")


def transformer_forward() -> dict:
    return _forward("transformer encoder forward (2 layers, d=128, batch 8x64)", "transformer_forward_work")


def two_streams() -> dict:
    """The same two independent op chains on one stream versus two streams, one
    intra-op thread: streams run on separate executors, so the chains overlap."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(256, 256, device="foo"), torch.randn(256, 256, device="foo")
        s1, s2 = torch.foo.Stream(), torch.foo.Stream()

        def chain(x):
            for _ in range(20):
                x = x @ x.t() * 1e-3
            return x

        def one_stream() -> None:
            with torch.foo.stream(s1):
                chain(a), chain(b)
            s1.synchronize()

        def both_streams() -> None:
            with torch.foo.stream(s1):
                chain(a)
            with torch.foo.stream(s2):
                chain(b)
            s1.synchronize(), s2.synchronize()

        two_s, one_s, r = ratio(both_streams, one_stream, repeat=5)
    finally:
        torch.set_num_threads(threads)
    return {"benchmark": "two independent chains: two streams vs one stream (1 thread)", "foo": two_s,
            "cpu": one_s, "ratio": r, "target": "<= 0.6x (of one stream)"}


def run() -> list[dict]:
    return [small_op_chain(), matmul(), mlp_forward(), transformer_forward(), two_streams()]

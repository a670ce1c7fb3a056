"""Graph replay on foo: against the same work launched eagerly on foo, and
a captured training step against the eager step on CPU."""

import torch

from bench_training import mlp
from common import ratio, row, synced
from cpu_side import cpu_workload


def replay_vs_eager_chain() -> dict:
    x = torch.ones(1000, device="foo")

    def chain() -> None:
        for _ in range(5_000):
            x.mul_(1.0001)

    g = torch.foo.FooGraph()
    with torch.foo.graph(g):
        chain()
    # Five replays in a row per timing, as a loop that replays a graph runs
    # them (and five eager chains on the other side). A replay after the
    # process has done something else for a while costs up to four times
    # more: its 5,000 nodes' state (iterators, tensors) is out of the caches.
    replay_s, eager_s, r = ratio(synced(g.replay), synced(chain), repeat=5, rounds=5)
    return {"benchmark": "graph replay of 5,000 in-place ops on 1,000 floats vs the same launched eagerly on foo",
            "foo": replay_s, "cpu": eager_s, "ratio": r, "target": "<= 0.2x (of eager foo)"}


def foreach_mlp_step_work(device: str):
    """The MLP training step as a graph captures it: gradients zeroed in
    place, not freed, and one foreach SGD update, on static inputs."""
    torch.manual_seed(0)
    model = mlp().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
    x, y = torch.randn(64, 512).to(device), torch.randint(0, 10, (64,)).to(device)

    def run() -> None:
        opt.zero_grad(set_to_none=False)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return run


def captured_training_step() -> dict:
    foo_step = foreach_mlp_step_work("foo")
    side = torch.foo.Stream()
    side.wait_stream(torch.foo.current_stream())
    with torch.foo.stream(side):  # warm-up: gradients exist before the capture
        foo_step()
    torch.foo.current_stream().wait_stream(side)
    g = torch.foo.FooGraph()
    with torch.foo.graph(g):
        foo_step()
    cpu_step = cpu_workload("bench_graphs", "foreach_mlp_step_work")
    return row("MLP training step (SGD foreach, batch 64) as a graph replay", *ratio(synced(g.replay), cpu_step, repeat=5),
               "<= 0.8x")


def run() -> list[dict]:
    return [replay_vs_eager_chain(), captured_training_step()]

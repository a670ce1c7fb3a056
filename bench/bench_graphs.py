"""Graph replay on foo: against the same work launched eagerly on foo, and
a captured training step against the eager step on CPU."""

import copy

import torch

from bench_training import mlp
from common import ratio, row, synced


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


def captured_training_step() -> dict:
    model = mlp()
    foo_model = copy.deepcopy(model).foo()
    x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
    static_x, static_y = x.foo(), y.foo()

    def step(m, opt, inputs, targets):
        def run() -> None:
            opt.zero_grad(set_to_none=False)
            torch.nn.functional.cross_entropy(m(inputs), targets).backward()
            opt.step()
        return run

    cpu_step = step(model, torch.optim.SGD(model.parameters(), lr=0.01, foreach=True), x, y)
    foo_step = step(foo_model, torch.optim.SGD(foo_model.parameters(), lr=0.01, foreach=True), static_x, static_y)
    side = torch.foo.Stream()
    side.wait_stream(torch.foo.current_stream())
    with torch.foo.stream(side):  # warm-up: gradients exist before the capture
        foo_step()
    torch.foo.current_stream().wait_stream(side)
    g = torch.foo.FooGraph()
    with torch.foo.graph(g):
        foo_step()
    return row("MLP training step (SGD foreach, batch 64) as a graph replay", *ratio(synced(g.replay), cpu_step, repeat=5),
               "<= 0.8x")


def run() -> list[dict]:
    return [replay_vs_eager_chain(), captured_training_step()]

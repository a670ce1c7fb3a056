"""End to end: models train on foo as they do on CPU from the same seed."""

import pytest
import torch

from conftest import held_stream

STEPS = 50


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 3, padding=1), torch.nn.BatchNorm2d(6), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(6 * 4 * 4, 10))


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def data(kind: str):
    g = torch.Generator().manual_seed(1)
    if kind == "cnn":
        return [(torch.randn(16, 1, 8, 8, generator=g), torch.randint(0, 10, (16,), generator=g)) for _ in range(5)]
    return [(torch.randn(8, 12, 32, generator=g), torch.randint(0, 4, (8,), generator=g)) for _ in range(5)]


def train(kind: str, device: str, autocast=None, scale: bool = False) -> list[float]:
    torch.manual_seed(0)
    model = (cnn() if kind == "cnn" else Encoder()).to(device)
    if kind == "cnn":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    scaler = torch.amp.GradScaler(torch.device(device).type) if scale else None
    batches = [(x.to(device), y.to(device)) for x, y in data(kind)]
    losses = []
    for step in range(STEPS):
        x, y = batches[step % len(batches)]
        opt.zero_grad()
        with torch.autocast(torch.device(device).type, dtype=autocast or torch.float32, enabled=autocast is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("kind", ["cnn", "transformer"])
def test_same_losses_as_cpu(foo, kind):
    cpu, on_foo = train(kind, "cpu"), train(kind, "foo")
    torch.testing.assert_close(torch.tensor(on_foo), torch.tensor(cpu), rtol=1e-3, atol=1e-4)
    assert on_foo[-1] < on_foo[0]


def test_a_model_on_foo1_trains_while_foo0_is_current(foo):
    assert foo.current_device() == 0
    torch.testing.assert_close(torch.tensor(train("cnn", "foo:1")), torch.tensor(train("cnn", "cpu")),
                               rtol=1e-3, atol=1e-4)
    assert foo.current_device() == 0


@pytest.mark.parametrize("dtype, scale", [(torch.bfloat16, False), (torch.float16, True)])
def test_mixed_precision_training(foo, dtype, scale):
    reference = train("transformer", "cpu")
    mixed = train("transformer", "foo", autocast=dtype, scale=scale)
    assert mixed[-1] < mixed[0] * 0.7                      # it learns
    # Lower precision drifts, but stays near the float32 run.
    assert abs(mixed[-1] - reference[-1]) < 0.1 * reference[0], (mixed[-1], reference[-1])


def test_sync_batch_norm_operators_on_one_rank_match_batch_norm_and_queue_without_waiting(foo):
    # nn.SyncBatchNorm's operators (no CPU kernels in ATen) with one rank's
    # statistics: the same outputs and gradients as batch norm, statistics
    # in float for half input (as CUDA's), and every step queued behind
    # the busy stream, the host never waiting.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 4, 3, 3, dtype=torch.float64, generator=g)
    w, b = torch.randn(4, dtype=torch.float64, generator=g), torch.randn(4, dtype=torch.float64, generator=g)
    go = torch.randn(5, 4, 3, 3, dtype=torch.float64, generator=g)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    rm, rv = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    torch.nn.functional.batch_norm(xr, rm, rv, wr, br, training=True, momentum=0.1, eps=1e-5).backward(go)
    want = torch.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=1e-5)

    X, W, B, GO = (t.to("foo").contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t.to("foo")
                   for t in (x, w, b, go))
    RM, RV = torch.zeros(4, dtype=torch.float64, device="foo"), torch.ones(4, dtype=torch.float64, device="foo")
    count = torch.tensor([45], dtype=torch.int32, device="foo")
    with held_stream() as still_held:  # a host that waited for the stream would wait for the gate, and fail
        mean, invstd = torch.batch_norm_stats(X, 1e-5)
        mean, invstd = torch.batch_norm_gather_stats_with_counts(X, mean[None], invstd[None], RM, RV, 0.1, 1e-5,
                                                                 count.double())
        out = torch.batch_norm_elemt(X, W, B, mean, invstd, 1e-5)
        sum_dy, sum_dy_xmu, gw, gb = torch.batch_norm_backward_reduce(GO, X, mean, invstd, W, True, True, True)
        gi = torch.batch_norm_backward_elemt(GO, X, mean, invstd, W, sum_dy, sum_dy_xmu, count)
        assert still_held() and not foo.current_stream().query()
    torch.testing.assert_close(out.cpu(), want)
    assert out.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(gi.cpu(), xr.grad)
    torch.testing.assert_close(gw.cpu(), wr.grad)
    torch.testing.assert_close(gb.cpu(), br.grad)
    torch.testing.assert_close(RM.cpu(), rm)
    torch.testing.assert_close(RV.cpu(), rv)

    # Half input: float statistics; a constant channel with eps 0 has an
    # inverse standard deviation of 0, not inf.
    h = torch.ones(2, 3, 4, dtype=torch.half, device="foo")
    mean, invstd = torch.batch_norm_stats(h, 0.0)
    assert mean.dtype == invstd.dtype == torch.float32
    assert invstd.cpu().tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.batch_norm_stats(torch.ones(3, device="foo"), 1e-5)

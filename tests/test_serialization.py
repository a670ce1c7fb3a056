"""torch.save / torch.load of foo tensors and modules, and DataLoader pinning."""

import io

import pytest
import torch


def _round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


def test_tensors_keep_their_device(foo):
    data = {"a": torch.arange(6.0, device="foo").reshape(2, 3), "b": torch.ones(2, device="foo:1")}
    loaded = _round_trip(data)
    assert loaded["a"].device == torch.device("foo:0") and loaded["b"].device == torch.device("foo:1")
    assert torch.equal(loaded["a"].cpu(), data["a"].cpu())


def test_map_location(foo):
    data = {"a": torch.arange(3.0, device="foo"), "b": torch.ones(2, device="foo:1")}
    assert _round_trip(data, map_location="cpu")["b"].device == torch.device("cpu")
    assert _round_trip(data, map_location="foo:1")["a"].device == torch.device("foo:1")
    moved = _round_trip(data, map_location={"foo:0": "foo:1", "foo:1": "foo:0"})
    assert moved["a"].device == torch.device("foo:1") and moved["b"].device == torch.device("foo:0")
    cpu_saved = _round_trip(torch.arange(3.0), map_location="foo")
    assert cpu_saved.device == torch.device("foo:0")


def test_views_stay_views(foo):
    base = torch.arange(10.0, device="foo")
    loaded = _round_trip([base, base[2:5]])
    assert loaded[1].untyped_storage().data_ptr() == loaded[0].untyped_storage().data_ptr()
    assert loaded[1].cpu().tolist() == [2.0, 3.0, 4.0]


def test_module_state_dict(foo):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).foo()
    state = _round_trip(model.state_dict())
    fresh = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).foo()
    fresh.load_state_dict(state)
    for key, value in model.state_dict().items():
        assert torch.equal(value.cpu(), fresh.state_dict()[key].cpu())
        assert fresh.state_dict()[key].is_foo


def test_dataloader_pins_for_foo(foo):
    dataset = torch.utils.data.TensorDataset(torch.randn(8, 3), torch.arange(8))
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, pin_memory=True)
    batches = list(loader)
    assert all(x.is_pinned() and y.is_pinned() for x, y in batches)
    on_device = [x.to("foo", non_blocking=True) for x, _ in batches]
    foo.synchronize()
    assert torch.equal(torch.cat([t.cpu() for t in on_device]), dataset.tensors[0])


def test_backend_metadata_survives_a_round_trip(foo):
    import torch_foo

    t = torch.ones(3, device="foo")
    torch_foo.set_backend_flag(t, "blocked_layout")
    torch_foo.set_backend_flag(t, "verified", False)
    assert torch_foo.backend_flags(t) == {"blocked_layout": True, "verified": False}
    for location in (None, "foo:1"):
        loaded = _round_trip({"t": t}, map_location=location)["t"]
        assert torch_foo.backend_flags(loaded) == {"blocked_layout": True, "verified": False}
    assert torch_foo.backend_flags(torch.zeros(2, device="foo")) == {}
    with pytest.raises(RuntimeError, match="kept on foo tensors"):
        torch_foo.set_backend_flag(torch.ones(2), "x")

"""torch.accelerator's device, stream and synchronization functions on foo."""

import pytest
import torch

from conftest import held_stream



def test_identity_and_counts(foo):
    assert torch.accelerator.current_accelerator() == torch.device("foo")
    assert torch.accelerator.current_accelerator(check_available=True).type == "foo"
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == 2


def test_device_index_functions(foo):
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1 == foo.current_device()
    torch.accelerator.set_device_index(0)
    with torch.accelerator.device_index(1):
        assert foo.current_device() == 1
    assert foo.current_device() == 0
    with pytest.raises(RuntimeError):
        with torch.accelerator.device_index(1):
            raise RuntimeError("leaving")
    assert foo.current_device() == 0
    # CUDA's error for an ordinal that names no device, with foo's name.
    with pytest.raises(torch.AcceleratorError, match=r"^foo error: invalid device ordinal\. The device index is out"):
        torch.accelerator.set_device_index(3)


def test_stream_functions(foo):
    assert torch.accelerator.current_stream() == foo.default_stream()
    s = torch.Stream("foo:1")
    torch.accelerator.set_stream(s)
    assert torch.accelerator.current_stream(1) == s
    assert torch.accelerator.current_device_index() == 1  # set_stream moves to the stream's device
    torch.accelerator.set_stream(foo.default_stream(1))
    torch.accelerator.set_device_index(0)


def test_synchronize_waits_for_the_device(foo):
    side = foo.Stream()
    with foo.stream(side):
        foo._sleep(200)                       # done after synchronize only if it waited
    foo._sleep(200)
    torch.accelerator.synchronize()
    assert side.query() and foo.current_stream().query()  # every stream of the device
    with held_stream(foo.current_stream(1)) as still_held:
        torch.accelerator.synchronize(0)      # returns although foo:1 is held
        assert still_held() and not foo.current_stream(1).query()
    torch.accelerator.synchronize("foo:1")
    assert foo.current_stream(1).query()


def test_device_capability_lists_dtypes_foo_computes_with(foo):
    dtypes = torch.accelerator.get_device_capability()["supported_dtypes"]
    assert {torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool} <= dtypes
    checked = 0
    for dtype in dtypes:                 # every listed dtype really moves and computes on foo
        try:
            cpu = torch.arange(6).to(dtype).reshape(2, 3)
        except (RuntimeError, TypeError):
            continue                     # CPU cannot build it from integers either (quantized types)
        got = cpu.to("foo").t().contiguous().cpu()
        assert got.dtype == dtype
        assert torch.equal(got.view(torch.uint8), cpu.t().contiguous().view(torch.uint8)), dtype
        checked += 1
    assert checked >= 10

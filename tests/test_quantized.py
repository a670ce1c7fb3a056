"""Quantized tensors on foo: foo registers no quantized kernels, so every
call that would make a quantized foo tensor raises NotImplementedError at
the call, as the dispatcher does on any backend without them, and nothing
foo reports lists the quantized dtypes as supported. (Before, the CPU
fallback handed back a float32 tensor for torch.quantize_per_tensor, and the
failure surfaced later, in unrelated code.)"""
import pytest
import torch

import torch_foo  # noqa: F401  (already autoloaded; explicit for readers)

QUANTIZED = {torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4}

CALLS = {
    "quantize_per_tensor": lambda: torch.quantize_per_tensor(torch.randn(4, device="foo"), 0.1, 5, torch.quint8),
    "quantize_per_tensor qint8": lambda: torch.quantize_per_tensor(torch.randn(4, device="foo"), 0.1, 0, torch.qint8),
    "quantize_per_tensor tensor qparams": lambda: torch.quantize_per_tensor(
        torch.randn(4, device="foo"), torch.tensor(0.1, device="foo"), torch.tensor(5, device="foo"), torch.quint8),
    "quantize_per_tensor list": lambda: torch.quantize_per_tensor(
        [torch.randn(4, device="foo")], torch.tensor([0.1], device="foo"), torch.tensor([5], device="foo"),
        torch.quint8),
    "quantize_per_channel": lambda: torch.quantize_per_channel(
        torch.randn(2, 3, device="foo"), torch.tensor([0.1, 0.2], device="foo"),
        torch.tensor([0, 1], device="foo"), 0, torch.quint8),
    "quantize_per_tensor_dynamic": lambda: torch.quantize_per_tensor_dynamic(
        torch.randn(4, device="foo"), torch.quint8, False),
    "empty": lambda: torch.empty(3, dtype=torch.quint8, device="foo"),
    "_empty_affine_quantized": lambda: torch._empty_affine_quantized(
        [3], scale=0.1, zero_point=1, dtype=torch.quint8, device="foo"),
    "CPU quantized tensor to foo": lambda: torch.quantize_per_tensor(torch.randn(3), 0.1, 1, torch.quint8).to("foo"),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_making_a_quantized_foo_tensor_raises_not_implemented_at_the_call(call):
    with pytest.raises(NotImplementedError, match="Quantizedfoo"):
        call()
    # Nothing was left to fail later: the stream is clean.
    x = torch.ones(3, device="foo") * 2
    torch.foo.synchronize()
    assert x.sum().item() == 6


def test_quantization_kernels_on_float_tensors_still_equal_cpu():
    x = torch.randn(16)
    want = torch.fake_quantize_per_tensor_affine(x, 0.1, 3, 0, 255)
    got = torch.fake_quantize_per_tensor_affine(x.to("foo"), 0.1, 3, 0, 255)
    assert torch.equal(got.cpu(), want)


def test_no_quantized_dtype_is_advertised():
    supported = torch.accelerator.get_device_capability("foo")["supported_dtypes"]
    assert not supported & QUANTIZED
    assert {torch.float32, torch.bfloat16, torch.int64, torch.bool} <= supported
    from torch._dynamo.device_interface import get_interface_for_device
    interface = get_interface_for_device("foo")
    assert not any(interface.is_dtype_supported(d) for d in QUANTIZED)
    assert interface.is_dtype_supported(torch.float16)

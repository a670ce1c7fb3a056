"""The layout of a foo convolution's output, as fake tensors predict it.

torch.compile and torch.export run convolutions on fake tensors, which ask
``torch._C._conv_determine_backend_memory_format`` what layout the
device's kernel gives. For foo (a PrivateUse1 backend, "Overrideable" to
ATen's convolution) torch answers contiguous, while foo's kernel follows
cuDNN (channels-last in, channels-last out): inductor's generated code then
asserts strides the kernel does not produce. For foo tensors the question
goes to foo's own rule (``csrc/aten/Convolution.h``), the one its kernels
use; other devices get torch's answer unchanged.
"""

import torch

_installed = False


def install() -> None:
    """Routes foo tensors' layout question to foo's rule; safe to call more than once."""
    global _installed
    if _installed:
        return
    _installed = True
    torch_answer = torch._C._conv_determine_backend_memory_format

    def conv_memory_format(input, weight, backend):  # noqa: ANN001, ANN202 - torch's signature
        if input.device.type == "foo":
            from torch_foo import _C

            return _C._convolution_memory_format(input, weight)
        return torch_answer(input, weight, backend)

    torch._C._conv_determine_backend_memory_format = conv_memory_format

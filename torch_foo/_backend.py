"""Makes ``foo`` a PyTorch device: backend name, device module, methods."""

import threading

import torch

_lock = threading.Lock()
_registered = False


def register() -> None:
    """Registers the foo backend with torch; safe to call more than once."""
    global _registered
    with _lock:
        if _registered:
            return
        # Loading the extension loads libtorch_foo, which names the backend
        # "foo" and installs the hooks and device guard from C++.
        from torch_foo import _C  # noqa: F401

        current = torch._C._get_privateuse1_backend_name()
        if current != "foo":
            raise RuntimeError(
                f"torch_foo cannot register: the PrivateUse1 backend is already named '{current}'"
            )
        # Same name again: lets torch's Python side cache it and alias the
        # profiler and autograd device types.
        torch.utils.rename_privateuse1_backend("foo")

        from torch_foo import foo as device_module

        if getattr(torch, "foo", None) is not device_module:
            torch._register_device_module("foo", device_module)
        # Tensor.foo(), Tensor.is_foo, Module.foo(), and the storage methods.
        if not hasattr(torch.Tensor, "is_foo"):
            torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
        # torch.compile: dynamo's device interface and inductor's backend,
        # registered when dynamo and inductor are first imported.
        from torch_foo.compile import _registration, fake_conv

        _registration.install()
        # Fake tensors (compile, export) predict foo's convolution layouts.
        fake_conv.install()
        # torch.distributed: the fooccl backend for foo tensors.
        from torch_foo import distributed

        distributed.register()
        # torch.multiprocessing: foo tensors shared with other processes (IPC).
        from torch_foo.foo import _ipc

        _ipc.install()
        # Interpreter exit: autograd's device threads done with the last backward pass.
        from torch_foo.foo import _autograd_exit

        _autograd_exit.install()
        _registered = True

"""torch_foo: a simulated accelerator for PyTorch, device type ``foo``.

Installed, it is loaded by ``import torch`` (the ``torch.backends`` entry
point) and device-agnostic code runs on it: ``torch.foo`` mirrors
``torch.cuda``, and ``torch.accelerator`` reports ``device(type='foo')``.
With ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, ``import torch_foo`` enables it.
Neither initializes the device runtime; the first real use of a device does.
"""

import os as _os

# Where CMake finds the TorchFoo package (docs/cpp.md), as
# torch.utils.cmake_prefix_path is where it finds Torch.
cmake_prefix_path = _os.path.join(_os.path.dirname(__file__), "share", "cmake")


def _autoload() -> None:
    """Entry point torch calls at the end of ``import torch``.

    Defined before anything is imported: when a user imports torch_foo
    first, torch's autoload finds this package half-imported and calls this.
    """
    from torch_foo._backend import register

    register()


# torch first: if this import is what loads torch, torch's autoload calls
# _autoload above, which registers the backend from a complete _backend.
import torch  # noqa: E402,F401

from torch_foo._backend import register as _register  # noqa: E402

_register()

from torch_foo import ops  # noqa: E402
from torch_foo.serialization import backend_flags, set_backend_flag  # noqa: E402
from torch_foo.foo.race import RaceError  # noqa: E402

__all__ = ["RaceError", "backend_flags", "cmake_prefix_path", "ops", "set_backend_flag"]

"""tinytrain: a small device-agnostic training utility.

It is torch_foo's example of a library whose test suite runs on foo in CI
(docs/guide/testing-your-library.md): nothing in it names a device type; it uses
whatever accelerator torch reports, or the CPU.
"""

from tinytrain.device import default_device
from tinytrain.prefetch import Prefetcher
from tinytrain.trainer import Trainer

__all__ = ["Prefetcher", "Trainer", "default_device"]

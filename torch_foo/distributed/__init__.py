"""fooccl: ``torch.distributed`` on foo tensors.

A c10d backend registered for device type ``foo`` under the name
``fooccl``. Transport is a gloo process group over the same store; the
C++ backend (``csrc/distributed``) gives it NCCL's stream semantics on foo:
collectives are queued on an internal stream after the caller's current
stream, where gloo works on the foo memory in place (or on pinned staging
copies, where a conversion or an overlap needs them), and return a Work
whose ``wait()`` makes the current stream wait.
"""

from torch_foo.distributed._registration import BACKEND_NAME, register

__all__ = ["BACKEND_NAME", "register"]

"""Which operators ran through foo's CPU fallback instead of a native kernel,
and which operators made the host wait for the device."""

from torch_foo import _C


def fallback_ops() -> list[str]:
    """Names of the operators (``"aten::name.overload"``) that have gone through the
    CPU fallback in this process, sorted. Set ``FOO_WARN_FALLBACK=1`` to be warned
    once per operator as it happens."""
    return list(_C._fallback_ops())


def synchronizing_ops() -> list[str]:
    """Names of the operators that synchronized the host with the stream, sorted.

    As on CUDA, operators whose results depend on the data (their output
    shapes, as ``nonzero`` or ``unique``, or a Python value, as ``.item()``,
    named ``aten::_local_scalar_dense``) make the host wait, and so do copies
    to or from pageable CPU memory (``aten::copy_ (device to host)``,
    ``aten::copy_ (host to device)``); every other operator returns once its
    work is queued."""
    return list(_C._synchronizing_ops())

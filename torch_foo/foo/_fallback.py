"""Which operators ran through foo's CPU fallback instead of a native kernel."""

from torch_foo import _C


def fallback_ops() -> list[str]:
    """Names of the operators (``"aten::name.overload"``) that have gone through the
    CPU fallback in this process, sorted. Set ``FOO_WARN_FALLBACK=1`` to be warned
    once per operator as it happens."""
    return list(_C._fallback_ops())

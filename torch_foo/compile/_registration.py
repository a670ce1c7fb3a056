"""Registers foo with dynamo and inductor without importing either early.

Importing dynamo or inductor takes seconds, so ``import torch`` must not:
the two modules of this package that import them are imported here inside
functions, when needed, not at module level. Dynamo's device interface is
registered the moment ``torch._dynamo.device_interface`` is imported
(before any code can ask it for ``foo``); inductor's backend when inductor's
``init_backend_registration`` looks up ``torch.foo.Scheduling`` and the
other codegen classes, at the start of its first compilation.
"""

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
from typing import Any

import torch_foo.foo as device_module

_DYNAMO_MODULE = "torch._dynamo.device_interface"

# Names that inductor's init_backend_registration reads from torch.foo.
INDUCTOR_ATTRIBUTES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")

_lock = threading.Lock()
_installed = False


def _register_dynamo() -> None:
    from torch_foo.compile import dynamo

    dynamo.register()


class _RegisterAfterExec(importlib.abc.Loader):
    """Runs the module's own loader, then registers foo's device interface."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _register_dynamo()


class _DynamoImportHook(importlib.abc.MetaPathFinder):
    """Wraps the loader of torch._dynamo.device_interface; removes itself once used."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _DYNAMO_MODULE:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisterAfterExec(spec.loader)
        return spec


def install() -> None:
    """Arranges both registrations; safe to call more than once."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        for name in INDUCTOR_ATTRIBUTES:
            device_module._register_lazy_attribute(name, functools.partial(inductor_attribute, name))
        if _DYNAMO_MODULE in sys.modules:
            _register_dynamo()
        else:
            sys.meta_path.insert(0, _DynamoImportHook())


def inductor_attribute(name: str) -> Any:
    """``torch.foo.<name>`` for inductor's lookup: registers the backend, returns the class."""
    from torch_foo.compile import inductor

    inductor.register()
    return inductor.CODEGEN_ATTRIBUTES[name]

"""The patches foo's inductor backend makes to torch internals check their
targets first: a torch whose target changed fails registration loudly,
naming the torch version, instead of compiling wrong code later."""

import re

import pytest
import torch
import torch._inductor.lowering as lowering
import torch._inductor.scheduler as scheduler
import torch._inductor.utils as inductor_utils

from torch_foo.compile import inductor

VERSION = re.escape(torch.__version__)


def test_every_target_is_what_the_patches_expect():
    # Registration (what torch.compile triggers) checks each target.
    inductor.register()
    assert getattr(scheduler.device_need_guard, "_foo_aware", False)
    assert getattr(lowering.is_gpu, "_foo_aware", False)
    assert getattr(lowering.lowerings[torch.ops.aten.addcmul.default], "_foo_aware", False)


def test_a_target_with_other_parameters_fails_loudly(monkeypatch):
    def device_need_guard(device, stream):  # same name, another signature
        return False

    device_need_guard.__module__ = "torch._inductor.utils"
    device_need_guard.__qualname__ = "device_need_guard"
    monkeypatch.setattr(scheduler, "device_need_guard", device_need_guard)
    with pytest.raises(ImportError, match=rf"torch {VERSION}.*device_need_guard\(device\)"):
        inductor._device_guard_for_foo()
    assert scheduler.device_need_guard is device_need_guard  # left as it was


def test_a_target_that_moved_fails_loudly(monkeypatch):
    def is_gpu(device):  # right signature, but not inductor's function
        return False

    monkeypatch.setattr(lowering, "is_gpu", is_gpu)
    with pytest.raises(ImportError, match=rf"torch {VERSION}.*torch\._inductor\.utils\.is_gpu"):
        inductor._pointwise_prefers_foo_over_cpu()
    assert lowering.is_gpu is is_gpu


def test_an_overridden_method_that_is_gone_fails_loudly(monkeypatch):
    monkeypatch.delattr(inductor.PythonWrapperCodegen, "make_allocation")
    with pytest.raises(ImportError, match=rf"torch {VERSION}.*PythonWrapperCodegen\.make_allocation"):
        inductor._expect_method(inductor.PythonWrapperCodegen, "make_allocation")


def test_the_failure_reaches_the_caller_of_torch_foo_attributes(monkeypatch):
    # inductor looks these up inside `except RuntimeError: pass`: the
    # failure must not be a RuntimeError, or torch.compile would go on
    # without foo's backend and fail obscurely.
    def get_current_backend(device_type=None, extra=None):
        return "triton"

    get_current_backend.__module__ = "torch._inductor.utils"
    get_current_backend.__qualname__ = "get_current_backend"
    monkeypatch.setattr(inductor, "_registered", False)
    monkeypatch.setattr(inductor_utils, "get_current_backend", get_current_backend)
    with pytest.raises(ImportError, match="get_current_backend"):
        torch.foo.Scheduling

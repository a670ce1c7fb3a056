"""Sending foo tensors to another process: refused when pickled, with a clear error.

foo has no IPC (docs/semantics.md); torch.multiprocessing shares CUDA
tensors through CUDA IPC handles, which foo cannot give.
"""
import multiprocessing
from multiprocessing.reduction import ForkingPickler

import pytest
import torch

NO_IPC = "foo tensors cannot be sent to another process: foo has no IPC"


def _never_runs(t):
    raise AssertionError("the child must not start")


@pytest.mark.parametrize("what", ["tensor", "view", "parameter", "untyped storage", "typed storage"])
def test_pickling_a_foo_tensor_for_another_process_raises(what):
    base = torch.arange(8.0, device="foo")
    obj = {"tensor": base, "view": base[::2], "parameter": torch.nn.Parameter(base),
           "untyped storage": base.untyped_storage(), "typed storage": base.storage()}[what]
    with pytest.raises(RuntimeError, match=NO_IPC):
        ForkingPickler.dumps(obj)


def test_cpu_tensors_still_pickle_for_another_process():
    assert len(ForkingPickler.dumps(torch.arange(4.0))) > 0


def test_a_spawned_process_given_a_foo_tensor_raises_at_start():
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=_never_runs, args=(torch.ones(2, device="foo"),))
    with pytest.raises(RuntimeError, match=NO_IPC):
        p.start()
    assert p.exitcode is None  # never started

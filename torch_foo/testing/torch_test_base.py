"""foo's device test base for PyTorch's own test files, judged by CUDA's rules.

Use: ``TORCH_TEST_DEVICES=$(python -m torch_foo testing-paths torch)``
with ``PYTORCH_TESTING_DEVICE_ONLY_FOR=foo``, then run an upstream
device-generic test file (``test_nn.py``, ``test_indexing.py``, ...) with
pytest. Its classes end in ``FOO`` and its tests in ``_foo``.

PyTorch's tests choose dtypes and expectations per device: ``@dtypesIfCUDA``,
OpInfo's ``dtypesIfCUDA``, ``if self.device_type == "cuda"``, ``@onlyCUDA``,
``@skipCUDAIf``, ``expectedFailureCUDA``. The generic PrivateUse1 class gets
CPU's choices, and foo follows CUDA's dtype coverage, not CPU's: asked for
what only CPU has (uint8 bilinear upsampling, integer matrix products), foo
raises as CUDA does. So this class, which replaces the generic one, takes
CUDA's choices:

- dtypes: ``@dtypesIfPRIVATEUSE1`` if given, else ``@dtypesIfCUDA``, else
  ``@dtypes``; OpInfo and ModuleInfo tests take the CUDA dtypes and CUDA's
  skips, xfails and tolerances of their database entries;
- in a test, ``self.device_type`` equals both ``"foo"`` and ``"cuda"``, so
  CUDA's branches, ``@skipCUDAIf`` and ``expectedFailureCUDA`` apply, and
  ``@onlyCUDA`` tests run; tensors still go to ``device``, a foo device;
- a test that reaches for ``torch.cuda`` itself (a CUDA-only API, a
  hard-coded ``"cuda"`` device) is skipped, saying so: it is not
  device-generic;
- ``FOO_KNOWN_DIFFERENCES``: where foo does not follow CUDA yet, skipped
  with the reason.

torch runs this file with ``runpy`` inside
``torch.testing._internal.common_device_type`` while that module is being
imported, with its globals (``PrivateUse1TestBase``, ``DeviceTypeTestBase``,
``device_type_test_bases``, ``torch``, ``unittest``): it must not import
that module, nor the OpInfo database, which imports it.
"""

import functools
import sys
import unittest

import torch

_CUDA_UNAVAILABLE = "Torch not compiled with CUDA enabled"

# Where foo's dtype coverage differs from CUDA's (OpInfo full names). Each
# entry: (op names, dtypes, why).
FOO_KNOWN_DIFFERENCES = [
    (("fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft", "fft.fft2", "fft.ifft2",
      "fft.rfft2", "fft.irfft2", "fft.hfft2", "fft.ihfft2", "fft.fftn", "fft.ifftn", "fft.rfftn", "fft.irfftn",
      "fft.hfftn", "fft.ihfftn"),
     (torch.half, torch.complex32),
     "foo has no half or complex32 FFT (CUDA has; foo raises, as CPU does)"),
    (("nansum", "nanmean"), (torch.complex32, torch.complex64, torch.complex128),
     "foo has no complex nansum/nanmean (CUDA has; foo raises, as CPU does)"),
    (("diag",), (torch.complex32,), "foo has no complex32 diag (CUDA has; foo raises, as CPU does)"),
    (("torch.ops.aten._flash_attention_forward", "torch.ops.aten._efficient_attention_forward"),
     (torch.float16, torch.bfloat16, torch.float32), "a fused CUDA attention kernel, which foo does not implement"),
    (("scatter_reduce.prod", "scatter_reduce.amin", "scatter_reduce.amax"), (torch.bool,),
     "foo computes bool scatter_reduce with prod/amin/amax, as CPU does; CUDA raises"),
    (("norm", "norm.inf"), (torch.complex32,), "foo computes complex32 norms, as CPU does; CUDA raises"),
]


class _FooDeviceType(str):
    """``"foo"`` that also equals ``"cuda"``: what a test sees as ``self.device_type``.

    It hashes as ``"foo"``: a table a test keys by device type finds foo's entry, not CUDA's."""

    def __eq__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return str.__eq__(self, other) or str.__eq__("cuda", other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__


class _DeviceTypeAttribute:
    """The class says ``"foo"`` (names, filters, ``torch.device``); an instance, running a test,
    says :class:`_FooDeviceType`."""

    def __get__(self, obj, owner=None):
        return "foo" if obj is None else _FooDeviceType("foo")


class _ViewedAsCuda:
    """What OpInfo and ModuleInfo parametrizations see of the class: CUDA's device type, to pick
    CUDA's dtypes and the database's CUDA decorators."""

    device_type = "cuda"


class FooTestBase(PrivateUse1TestBase):  # noqa: F821  (common_device_type's global)
    device_type = _DeviceTypeAttribute()
    # What CUDATestBase gives tests that ask: foo's linear algebra is CPU's LAPACK (present), and
    # it has no cuDNN.
    no_magma = False
    no_cudnn = True
    cudnn_version = None

    @property
    def bypass_device_restrictions(self) -> bool:
        # Read by @onlyOn(...) when the device type is not among its targets; a single target
        # string is matched by substring there, which "foo" never is of "cuda". Run the test if
        # the decorator's targets include CUDA.
        targets = getattr(sys._getframe(1).f_locals.get("self"), "device_type", ())
        return targets == "cuda" or (not isinstance(targets, str) and "cuda" in targets)

    def has_cudnn(self) -> bool:
        return False

    @classmethod
    def setUpClass(cls):
        # PrivateUse1TestBase's would overwrite device_type with a plain string.
        cls.device_mod = torch.foo
        cls.primary_device = f"foo:{torch.foo.current_device()}"

    @classmethod
    def _get_dtypes(cls, test):
        if not hasattr(test, "dtypes"):
            return None
        if "all" not in test.dtypes:
            raise AssertionError(f"@dtypes is mandatory when using @dtypesIf however '{test.__name__}' didn't specify it")
        for device_type in ("foo", "cuda", "all"):
            if device_type in test.dtypes:
                return test.dtypes[device_type]

    @classmethod
    def _apply_op_overrides(cls, ops, test=None):
        if cls.op_overrides is None:
            cls.op_overrides = _known_differences()
        super()._apply_op_overrides(ops, test)

    @classmethod
    def instantiate_test(cls, name, test, *, generic_cls=None):
        parametrize = getattr(test, "parametrize_fn", None)
        if parametrize is not None:
            view = type(f"{cls.__name__}ViewedAsCuda", (_ViewedAsCuda, cls), {})
            test.parametrize_fn = lambda test, generic_cls, device_cls: parametrize(test, generic_cls, view)
        before = set(cls.__dict__)
        super().instantiate_test(name, test, generic_cls=generic_cls)
        for added in set(cls.__dict__) - before:
            setattr(cls, added, _skipped_if_cuda_itself(getattr(cls, added)))


def _skipped_if_cuda_itself(test):
    @functools.wraps(test)
    def run(self, *args, **kwargs):
        try:
            return test(self, *args, **kwargs)
        except AssertionError as e:
            if _CUDA_UNAVAILABLE in str(e):
                raise unittest.SkipTest(f"uses torch.cuda or a 'cuda' device itself, not the test's device "
                                        f"(not device-generic): {e}") from None
            raise

    return run


def _known_differences() -> dict:
    from torch.testing._internal.opinfo.core import DecorateInfo

    overrides: dict = {}
    for names, dtypes, why in FOO_KNOWN_DIFFERENCES:
        for name in names:
            overrides.setdefault(name, []).append(DecorateInfo(unittest.skip(why), dtypes=dtypes))
    return overrides


# The generic PrivateUse1 class would run every test a second time, by CPU's rules.
if PrivateUse1TestBase in device_type_test_bases:  # noqa: F821
    device_type_test_bases.remove(PrivateUse1TestBase)  # noqa: F821

TEST_CLASS = FooTestBase

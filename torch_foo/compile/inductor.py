"""Inductor's backend for foo.

foo memory is host memory, so kernels come from inductor's C++ CPU code
generation. What foo changes is how they run: inductor calls a C++ kernel
synchronously from Python, while foo operators are queued on the current
stream. Here each kernel gets a packed entry point (its arguments in one
array), is compiled as a plain shared library (``codecache.FooKernelCodeCache``), and
the wrapper launches it with ``torch_foo.compile.runtime.launch``, which
queues the call on the current foo stream with the arguments taken at
launch. Extern kernels (``mm``, convolution, …) are foo operators, queued
on the same stream, so everything runs in program order, and a compiled
call returns once its work is queued.
"""

import inspect
import os
import threading
from typing import Any, Optional

import torch
from torch._inductor import config
from torch._inductor.codegen.common import (
    DeviceOpOverrides,
    register_backend_for_device,
    register_device_op_overrides,
)
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.custom_graph_pass import CustomGraphModulePass, get_hash_for_files
from torch._inductor.utils import Placeholder, get_fused_kernel_name
from torch._inductor.virtualized import V

from torch_foo import _C

_RUNTIME_IMPORTS = (
    "from torch_foo.compile.runtime import launch as foo_launch, empty_strided_foo",
    "from torch_foo.compile.codecache import compile_kernel as foo_compile_kernel",
)

# The generated kernel keeps inductor's signature under this name; the
# packed entry point `kernel` added after it is what the launcher calls.
_KERNEL_IMPL = "foo_kernel_impl"

_PACKED_ARG = """
union foo_kernel_arg { const void* ptr; int64_t i; double d; };
"""


def _unpack(arg_type: str, i: int, kernel_name: str) -> str:
    """The C++ expression that reads argument ``i`` of type ``arg_type`` from the packed array."""
    t = arg_type.strip()
    if t.endswith("*"):
        return f"({t})(args[{i}].ptr)"
    value_type = t.removeprefix("const ").strip()
    if value_type in ("int64_t", "int32_t", "long", "int"):
        return f"({value_type})(args[{i}].i)"
    if value_type == "bool":
        return f"(args[{i}].i != 0)"
    if value_type in ("float", "double"):
        return f"({value_type})(args[{i}].d)"
    raise RuntimeError(
        f"torch.compile on foo: kernel {kernel_name} takes argument {i} of type '{arg_type}', "
        "which foo's kernel launcher cannot pass"
    )


def packed_entry_point(arg_types: list[str], kernel_name: str) -> str:
    """C++ source of ``kernel(const foo_kernel_arg* args)``, calling the kernel with unpacked args."""
    unpacked = ", ".join(_unpack(t, i, kernel_name) for i, t in enumerate(arg_types))
    return (
        _PACKED_ARG
        + 'extern "C" __attribute__((visibility("default"))) void kernel(const foo_kernel_arg* args) {\n'
        + f"    {_KERNEL_IMPL}({unpacked});\n"
        + "}\n"
    )


def written_arguments(arg_types: list[str]) -> list[bool]:
    """Which of a kernel's arguments it writes: its pointers to non-const data (inductor's
    ``out_ptr``/``in_out_ptr``; inputs are ``const T*``)."""
    return [t.strip().endswith("*") and not t.strip().startswith("const ") for t in arg_types]


class FooCppScheduling(CppScheduling):
    """Inductor's C++ scheduling, with kernels defined for foo's launcher."""

    def ready_to_flush(self) -> bool:
        # The C++ kernel group gathers consecutive nodes into one kernel, and
        # the scheduler opens and closes stream blocks (`with stream1:`)
        # without flushing it: the kernel would be launched after its block,
        # on the wrong stream, with nodes of other streams fused in. In a
        # graph with several streams, each node is launched at once, inside
        # its own stream's block, as GPU backends launch theirs.
        if self.scheduler is not None and self.scheduler._has_multi_stream_nodes():
            return True
        return super().ready_to_flush()

    def define_kernel(self, src_code: str, nodes: Any, kernel_args: Any = None) -> str:
        try:
            return self._define_foo_kernel(src_code, nodes, kernel_args)
        except Exception as e:
            # Inductor reports this as an InductorError; name what failed.
            raise RuntimeError(f"torch.compile on foo: cannot define the kernel for {_describe(nodes)}: {e}") from e

    def _define_foo_kernel(self, src_code: str, nodes: Any, kernel_args: Any) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        if V.graph.cpp_wrapper:
            raise RuntimeError("cpp_wrapper is not supported on foo; use the Python wrapper")
        fused_name = get_fused_kernel_name(nodes, config.cpp.descriptive_names) if config.cpp.descriptive_names else ""
        kernel_name = "_".join(["cpp", fused_name, wrapper.next_kernel_suffix()])
        args = self.kernel_group.args if kernel_args is None else kernel_args
        _, _, arg_types = args.cpp_argdefs()
        source = (
            src_code.replace(str(Placeholder.KERNEL_NAME), _KERNEL_IMPL)
            .replace(str(Placeholder.DESCRIPTIVE_NAME), kernel_name)
            .replace("#pragma CMT", "//")
        )
        source += packed_entry_point(arg_types, kernel_name)
        wrapper.src_to_kernel[src_code] = kernel_name
        wrapper._foo_runtime_import()
        writes = written_arguments(arg_types)
        wrapper.define_kernel(
            kernel_name, f"foo_compile_kernel(async_compile, {kernel_name!r}, r'''\n{source}''', {writes!r})", gpu=False)
        return kernel_name


def _describe(nodes: Any) -> str:
    """Scheduler node names and the FX nodes they come from, for error messages."""
    names, origins = [], []
    for node in nodes or ():
        if not hasattr(node, "get_name"):
            continue
        names.append(node.get_name())
        for origin in getattr(node.node, "origins", None) or ():
            if origin.name not in origins:
                origins.append(origin.name)
    return f"node(s) {', '.join(names) or '?'} (from FX node(s) {', '.join(origins) or '?'})"


class _FooWrapperMixin:
    """Allocates foo buffers with an explicit device index and queues C++ kernels on foo streams."""

    def _foo_runtime_import(self) -> None:
        root = self.get_root_graph() if isinstance(self, SubgraphPythonWrapperCodegen) else self
        for line in _RUNTIME_IMPORTS:
            root.add_import_once(line)

    def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, *, device: Any = None,
                                     triton: bool = True, **kwargs: Any) -> None:
        device = device or V.graph.get_current_device_or_throw()
        if device.type != "foo":
            return super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton, **kwargs)
        if triton:
            raise RuntimeError(f"torch.compile on foo: {kernel_name} is a Triton kernel; foo runs C++ kernels only")
        self._foo_runtime_import()
        index = device.index if device.index is not None else -1
        args = "".join(f"{a}, " for a in call_args)
        self.writeline(f"foo_launch({kernel_name}, {index}, ({args})){self.ending}")

    def make_allocation(self, name: str, device: torch.device, dtype: torch.dtype, shape: Any, stride: Any,
                        allocation_shape: Any = None, is_pinned: bool = False) -> str:
        if device.type != "foo" or config.test_configs.track_memory_lifecycle:
            return super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
        self._foo_runtime_import()
        if allocation_shape is None:
            allocation_shape = shape
        shape_code = self.codegen_python_shape_tuple(shape)
        allocation_code = self.codegen_python_shape_tuple(allocation_shape)
        stride_code = self.codegen_python_shape_tuple(stride)
        index = device.index if device.index is not None else "torch.foo.current_device()"
        out = f"{name} = empty_strided_foo({allocation_code}, {stride_code}, {dtype}, {index})"
        if shape_code != allocation_code:
            out += f".as_strided({shape_code}, {stride_code})"
        return out


class FooSubgraphWrapperCodegen(_FooWrapperMixin, SubgraphPythonWrapperCodegen):
    """Wrapper code of a subgraph (control flow, partitions) of a foo graph."""


class FooWrapperCodegen(_FooWrapperMixin, PythonWrapperCodegen):
    """Python wrapper code for foo graphs."""

    @staticmethod
    def create(is_subgraph: bool, subgraph_name: str | None, parent_wrapper: Any,
               partition_signatures: Any = None) -> PythonWrapperCodegen:
        if is_subgraph:
            assert subgraph_name is not None and parent_wrapper is not None
            return FooSubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return FooWrapperCodegen()


class FooCppWrapperCodegen:
    """Placeholder for ``cpp_wrapper=True``, which foo does not support yet."""

    supports_caching = False

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("torch.compile on foo: cpp_wrapper is not supported; use the Python wrapper")


class FooDeviceOpOverrides(DeviceOpOverrides):
    """Python snippets inductor emits for foo devices and streams."""

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from torch_foo.compile.runtime import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.foo.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.foo.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.foo.device({device_idx})"

    def current_stream(self) -> str:
        return "torch.foo.current_stream()"

    def cpp_kernel_type(self) -> str:
        return "void*"


def _parameters(fn: Any) -> str:
    """``fn``'s parameter names, keyword-only ones after ``*``: ``"self, tensor1, *, value"``."""
    names, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            names.append("*")
            star = True
        names.append({p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name)
    return ", ".join(names)


def _expect(target: Any, module: str, qualname: str, parameters: str) -> None:
    """Fails loudly unless ``target`` still is the torch function a patch below replaces or wraps.

    Each patch relies on what its target does in the torch version it was
    written for; a target that moved, was renamed or takes other parameters
    may no longer do it, and patching it anyway would fail later, somewhere
    in inductor, or not at all. An ImportError, not a RuntimeError: inductor
    looks up ``torch.foo.Scheduling`` inside ``except RuntimeError: pass``,
    which would hide this one.
    """
    found = (getattr(target, "__module__", None), getattr(target, "__qualname__", None))
    try:
        found_parameters = _parameters(target)
    except (TypeError, ValueError):
        found_parameters = "?"
    if found != (module, qualname) or found_parameters != parameters:
        raise ImportError(
            f"torch_foo cannot register its inductor backend with torch {torch.__version__}: it patches "
            f"{module}.{qualname}({parameters}), but this torch has {found[0]}.{found[1]}({found_parameters}) "
            "there. Use the torch version this torch_foo was built for.")


def _expect_method(cls: type, name: str) -> None:
    """Fails loudly (as ``_expect``) unless ``cls`` still has the method a class below overrides."""
    if not callable(getattr(cls, name, None)):
        raise ImportError(
            f"torch_foo cannot register its inductor backend with torch {torch.__version__}: it overrides "
            f"{cls.__module__}.{cls.__qualname__}.{name}, which this torch does not have. Use the torch "
            "version this torch_foo was built for.")


def _schedule_foo_nodes_as_cpu() -> None:
    """Makes inductor's scheduler treat foo nodes as the C++ kernels they are.

    The scheduler's loop reindexing for fusion (``Scheduler.
    shared_data_after_reordering_loop`` and the like) assumes Triton's
    iteration groups for any node whose ``is_cpu()`` is false, and fails on
    the C++ scheduling's groups. torch 2.13 has no per-backend switch for
    it, so ``BaseSchedulerNode.is_cpu`` answers True for foo nodes too.
    """
    from torch._inductor.scheduler import BaseSchedulerNode

    if getattr(BaseSchedulerNode.is_cpu, "_foo_aware", False):
        return
    _expect(BaseSchedulerNode.is_cpu, "torch._inductor.scheduler", "BaseSchedulerNode.is_cpu", "self")

    def is_cpu(self: BaseSchedulerNode) -> bool:
        device = self.get_device()
        return device is not None and device.type in ("cpu", "foo")

    is_cpu._foo_aware = True  # type: ignore[attr-defined]
    BaseSchedulerNode.is_cpu = is_cpu  # type: ignore[method-assign]


def _cpp_backend_for_foo() -> None:
    """Makes ``get_current_backend`` answer inductor's CPU backend (``cpp``) for foo.

    torch 2.13 answers ``config.cuda_backend`` (``triton``) for any device
    it does not know, and kernel code generation uses the answer (dtype
    propagation of C++ kernels, for one: dropout's random kernels fail
    without it). The function is imported by name, so each importing module
    gets the wrapper.
    """
    import torch._inductor.kernel.mm_common as mm_common
    import torch._inductor.scheduler as scheduler
    import torch._inductor.utils as utils
    from torch._inductor.codegen import common

    original = utils.get_current_backend
    if getattr(original, "_foo_aware", False):
        return
    _expect(original, "torch._inductor.utils", "get_current_backend", "device_type")

    def get_current_backend(device_type: str | None = None) -> str:
        if device_type is None:
            device_type = V.graph.get_current_device_or_throw().type
        if device_type == "foo":
            return config.cpu_backend
        return original(device_type)

    get_current_backend._foo_aware = True  # type: ignore[attr-defined]
    for module in (utils, common, scheduler, mm_common):
        if getattr(module, "get_current_backend", None) is original:
            module.get_current_backend = get_current_backend


def _device_guard_for_foo() -> None:
    """Makes the scheduler enter a device guard (and its stream contexts) for foo.

    Inductor enters ``with <device_guard>:`` around a device's code, and
    defines there the streams that user stream annotations refer to
    (``default_stream``, ``stream1``, ...), only where ``device_need_guard``
    says so: GPUs. foo needs both, so the scheduler's ``device_need_guard``
    also answers True for foo.
    """
    import torch._inductor.scheduler as scheduler

    original = scheduler.device_need_guard
    if getattr(original, "_foo_aware", False):
        return
    _expect(original, "torch._inductor.utils", "device_need_guard", "device")

    def device_need_guard(device: str) -> bool:
        return device == "foo" or original(device)

    device_need_guard._foo_aware = True  # type: ignore[attr-defined]
    scheduler.device_need_guard = device_need_guard


def _pointwise_prefers_foo_over_cpu() -> None:
    """Makes an element-wise kernel with foo and CPU inputs run on foo.

    A CPU 0-dim tensor may join a foo tensor in an element-wise operator, as
    a scalar (``s + x``). Inductor's lowering places such a kernel on the
    first input's device unless another input is on a GPU (``is_gpu``), so
    with ``s`` first it made a CPU kernel that read foo memory without
    waiting for its stream and returned a CPU tensor. Eager (and CUDA)
    give a foo tensor. ``is_gpu`` is imported by name and called only there
    in ``torch._inductor.lowering``, so that module's copy also answers True
    for foo.
    """
    import torch._inductor.lowering as lowering

    original = lowering.is_gpu
    if getattr(original, "_foo_aware", False):
        return
    _expect(original, "torch._inductor.utils", "is_gpu", "device")

    def is_gpu(device: str | None) -> bool:
        return device == "foo" or original(device)

    is_gpu._foo_aware = True  # type: ignore[attr-defined]
    lowering.is_gpu = is_gpu


def _addcmul_with_a_cpu_scalar_runs_on_foo() -> None:
    """Makes ``addcmul(s, t1, t2)`` with a CPU 0-dim ``s`` and foo ``t1``/``t2`` run on foo.

    Inductor's ``addcmul`` lowering builds its kernel on ``self``'s device
    without asking ``is_gpu``, so such a call made a CPU kernel that read
    foo memory without waiting for its stream and returned a CPU tensor.
    That case goes through the element-wise lowerings instead (``t1 * t2``,
    times ``value``, plus ``s``), which place the kernel on foo, in eager's
    order of operations.
    """
    import torch._inductor.lowering as lowering
    from torch._inductor import ir

    aten = torch.ops.aten
    original = lowering.lowerings[aten.addcmul.default]
    if getattr(original, "_foo_aware", False):
        return
    _expect(original, "torch._inductor.lowering", "addcmul", "self, tensor1, tensor2, *, value")

    def device_type(x: Any) -> Optional[str]:
        if isinstance(x, ir.TensorBox) and x.get_device() is not None:
            return x.get_device().type
        return None

    def addcmul(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        if device_type(self) == "cpu" and "foo" in (device_type(tensor1), device_type(tensor2)):
            mul, add = lowering.lowerings[aten.mul.Tensor], lowering.lowerings[aten.add.Tensor]
            product = mul(tensor1, tensor2)
            if not (isinstance(value, (int, float)) and value == 1):
                product = mul(product, value)
            return add(self, product)
        return original(self, tensor1, tensor2, value=value)

    addcmul._foo_aware = True  # type: ignore[attr-defined]
    lowering.lowerings[aten.addcmul.default] = addcmul


class _FooCodegenVersion(CustomGraphModulePass):
    """A pass that changes nothing; its ``uuid`` puts foo's code generation into inductor's cache keys.

    Inductor caches generated wrapper code (FX graph cache) keyed on torch's
    own sources; without this, code generated by another torch_foo version
    (calling its launcher differently, or expecting other convolution
    layouts) would be reused.
    """

    def __call__(self, gm: torch.fx.GraphModule) -> None:
        return None

    def uuid(self) -> bytes:
        here = os.path.dirname(os.path.abspath(__file__))
        files = ("inductor.py", "codecache.py", "runtime.py", "fake_conv.py")
        return get_hash_for_files(tuple(os.path.join(here, f) for f in files), extra=_C.__file__)


_lock = threading.Lock()
_registered = False


def register() -> None:
    """Registers the foo backend with inductor; safe to call more than once."""
    global _registered
    with _lock:
        if _registered:
            return
        for cls, names in ((CppScheduling, ("ready_to_flush", "define_kernel")),
                           (PythonWrapperCodegen, ("_generate_kernel_call_helper", "make_allocation"))):
            for name in names:
                _expect_method(cls, name)
        # The patches first: each checks its target before it changes
        # anything, and changes only what inductor does for foo, so a torch
        # that fails a check is left without foo's backend and unchanged for
        # every other device.
        _schedule_foo_nodes_as_cpu()
        _cpp_backend_for_foo()
        _device_guard_for_foo()
        _pointwise_prefers_foo_over_cpu()
        _addcmul_with_a_cpu_scalar_runs_on_foo()
        register_backend_for_device("foo", FooCppScheduling, FooWrapperCodegen, FooCppWrapperCodegen,
                                    device_custom_pass=_FooCodegenVersion())
        register_device_op_overrides("foo", FooDeviceOpOverrides())
        _registered = True


# The names inductor's init_backend_registration looks up on torch.foo.
CODEGEN_ATTRIBUTES = {
    "Scheduling": FooCppScheduling,
    "PythonWrapperCodegen": FooWrapperCodegen,
    "CppWrapperCodegen": FooCppWrapperCodegen,
    "WrapperFxCodegen": None,
}

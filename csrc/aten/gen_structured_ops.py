"""Generates foo's operator tables from the native_functions.yaml that ships
with torch (torchgen/packaged). Rerun both after a torch upgrade:

    python csrc/aten/gen_structured_ops.py ops > csrc/aten/StructuredOps.cpp
    python csrc/aten/gen_structured_ops.py device-checks > csrc/aten/DeviceCheckTable.cpp
    python csrc/aten/gen_structured_ops.py sparse > csrc/aten/SparseOps.cpp
    python csrc/aten/gen_structured_ops.py stubs > csrc/aten/QueuedStubList.cpp
    python csrc/aten/gen_structured_ops.py host > csrc/aten/HostOps.cpp

- ops: for every structured operator with a CPU kernel, a single output and
  argument types the Structured template carries, registers its functional,
  in-place and out= overloads for PrivateUse1.
- device-checks: the operators whose CUDA kernels do not require every
  tensor argument on the kernel's device (`device_check: NoCheck`); for all
  others CUDA's generated wrappers reject a CPU tensor, 0-dim or not, and
  foo does the same.
- sparse: the sparse-layout kernels that CPU and CUDA share (one ATen
  function registered for both, written in terms of other operators, so
  device-generic), registered for foo's sparse dispatch keys; and the
  conversions from dense to sparse layouts, which CPU and CUDA share too.
- stubs: a foo entry for every DispatchStub the installed headers declare,
  queueing its CPU kernel (QueuedStubs.h).
- host: the operators whose host function CPU shares with CUDA, run on
  foo at the call (host_ops).
"""

import os
import sys

import torchgen
from torchgen import local
from torchgen.api import meta
from torchgen.api.types import CppSignatureGroup, NativeSignature
from torchgen.gen import get_grouped_native_functions, parse_native_yaml
from torchgen.model import Argument, DeviceCheckType, DispatchKey, NativeFunctionsGroup

CARRIED_TYPES = {
    "const at::Tensor &", "const ::std::optional<at::Tensor> &", "const at::Scalar &",
    "const ::std::optional<at::Scalar> &", "at::IntArrayRef", "at::OptionalIntArrayRef", "int64_t", "bool",
    "double", "at::ScalarType", "::std::optional<at::ScalarType>", "::std::optional<int64_t>",
    "::std::optional<double>", "::std::optional<bool>", "c10::string_view", "::std::optional<c10::string_view>",
    "const c10::List<::std::optional<at::Tensor>> &",
}

# Structured operators left to the fallback, with the reason.
EXCLUDED = {
    # Their CPU kernels are not pure functions of the arguments (RNG state).
    "bernoulli", "normal", "uniform", "random", "exponential", "geometric", "cauchy", "log_normal",
    # With a reduction, their CPU kernels resize the output away from the
    # shape their meta function gives it.
    "mse_loss", "smooth_l1_loss",
}


def parsed_yaml():
    root = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native")
    return parse_native_yaml(os.path.join(root, "native_functions.yaml"), os.path.join(root, "tags.yaml"))


def device_check(g) -> str:
    return "NoCheck" if g.out.device_check == DeviceCheckType.NoCheck else "ExactSame"


def selected_groups():
    parsed = parsed_yaml()
    cpu = parsed.backend_indices[DispatchKey.CPU]
    for g in get_grouped_native_functions(parsed.native_functions):
        if not (isinstance(g, NativeFunctionsGroup) and g.structured and cpu.has_kernel(g.out)):
            continue
        if len(g.out.func.arguments.out) != 1 or str(g.functional.func.name.name.base) in EXCLUDED:
            continue
        sig = CppSignatureGroup.from_native_function(g.out, method=False).signature
        types = [a.type for a in sig.arguments()]
        if types[:2] != ["at::Tensor &", "const at::Tensor &"] or not set(types[2:]) <= CARRIED_TYPES:
            continue
        if any("Generator" in t for t in types):
            continue
        yield g, sig, native_class(g, cpu)


def native_class(g, cpu) -> str | None:
    """ATen's CPU structured class of an operator built on TensorIterator,
    whose captured kernels keep their iterator between graph replays
    (KeptIterator.h); None for the others."""
    if g.out.structured_inherits != "TensorIteratorBase" or g.out.precomputed is not None:
        return None
    return f"at::native::structured_{cpu.get_kernel(g.out).kernel}"


def print_ops() -> None:
    lines, includes = [], set()
    with local.parametrize(use_const_ref_for_mutable_tensors=False, use_ilistref_for_tensor_lists=True):
        for g, sig, native in selected_groups():
            root = g.functional.root_name
            includes.update({f"<ATen/ops/{root}_meta.h>", f"<ATen/ops/{root}_cpu_dispatch.h>"})
            if native:
                includes.add(f"<ATen/ops/{root}_native.h>")
            names = [f'"{g.functional.func.name}"', f'"{g.inplace.func.name}"' if g.inplace else "nullptr",
                     f'"{g.out.func.name}"']
            lines.append(
                f'  Structured<"aten::{g.functional.func.name}", DeviceCheck::{device_check(g)}, at::meta::structured_{meta.name(g)},\n'
                f"             static_cast<{sig.type().replace(' (', '(*)(', 1)}>(&at::cpu::{sig.name()})"
                f"{', ' + native if native else ''}>"
                f"::register_in(m, {', '.join(names)});")
    print("// Generated by gen_structured_ops.py from torch's native_functions.yaml: do not edit.")
    print("// Native foo kernels for ATen's structured operators (see Structured.h).")
    print('#include "aten/Structured.h"\n')
    for inc in sorted(includes):
        print(f"#include {inc}")
    print("\nnamespace foo::aten {\nnamespace {\n")
    print("TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {")
    print("\n".join(lines))
    print("}\n\n}  // namespace\n}  // namespace foo::aten")


def print_device_checks() -> None:
    names = sorted({f"aten::{f.func.name}" for f in parsed_yaml().native_functions
                    if f.device_check == DeviceCheckType.NoCheck})
    print("// Generated by gen_structured_ops.py from torch's native_functions.yaml: do not edit.")
    print("// Operators whose CUDA kernels accept arguments on other devices (see DeviceCheck.h).")
    print('#include "aten/DeviceCheck.h"\n')
    print("#include <algorithm>\n#include <iterator>\n#include <string_view>\n")
    print("namespace foo::aten {\nnamespace {\n")
    print("// Sorted, for binary search.")
    print("constexpr std::string_view kNoDeviceCheck[] = {")
    for n in names:
        print(f'    "{n}",')
    print("};\n\n}  // namespace\n")
    print("bool has_exact_device_check(std::string_view op_name_and_overload) {")
    print("  return !std::binary_search(std::begin(kNoDeviceCheck), std::end(kNoDeviceCheck), op_name_and_overload);")
    print("}\n\n}  // namespace foo::aten")


def shared_kernels(parsed, cpu_key, cuda_key, wanted=lambda f: True):
    cpu, cuda = parsed.backend_indices[cpu_key], parsed.backend_indices[cuda_key]
    for f in parsed.native_functions:
        on_cpu, on_cuda = cpu.get_kernel(f), cuda.get_kernel(f)
        if on_cpu and on_cuda and on_cpu.kernel == on_cuda.kernel and wanted(f):
            yield f, on_cpu


def device_guard(f, sig) -> str:
    """The device guard CUDA's generated wrapper of ``f`` sets, as a statement.

    A factory switches to the device it is given, any other operator to its
    first tensor argument's device, unless the schema says ``device_guard:
    False``. Without it, a kernel on tensors of foo:1 made its new tensors
    (a sparse tensor's placeholder indices, say) on the current device.
    """
    if not f.device_guard:
        return ""
    bindings = sig.arguments()
    if any(b.name == "device" for b in bindings):
        return "  const c10::OptionalDeviceGuard device_guard(device);\n"
    for b in bindings:
        if isinstance(b.argument, Argument) and b.argument.type.is_tensor_like():
            return f"  const c10::OptionalDeviceGuard device_guard(at::device_of({b.name}));\n"
    return ""


def print_sparse() -> None:
    parsed = parsed_yaml()
    blocks, includes, wrappers = [], set(), []
    to_sparse = lambda f: str(f.func.name.name).startswith("_to_sparse")  # noqa: E731
    for key, cpu_key, cuda_key, wanted in (
            ("SparsePrivateUse1", DispatchKey.SparseCPU, DispatchKey.SparseCUDA, lambda f: True),
            ("SparseCsrPrivateUse1", DispatchKey.SparseCsrCPU, DispatchKey.SparseCsrCUDA, lambda f: True),
            ("PrivateUse1", DispatchKey.CPU, DispatchKey.CUDA, to_sparse)):
        lines = []
        for f, kernel in shared_kernels(parsed, cpu_key, cuda_key, wanted):
            includes.add(f"<ATen/ops/{f.root_name}_native.h>")
            with local.parametrize(use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                                   use_ilistref_for_tensor_lists=f.part_of_structured_group):
                sig = NativeSignature(f.func, symint=kernel.supports_symint())
                guard = device_guard(f, sig)
                if not guard:
                    ptr = sig.ptr_type()
                    lines.append(f'  m.impl("{f.func.name}", TORCH_FN(static_cast<{ptr}>(&at::native::{kernel.kernel})));')
                    continue
                name = f"{key}_{f.func.name.unambiguous_name()}"
                call = ", ".join(b.name for b in sig.arguments())
                wrappers.append(f"{sig.defn(name=name)} {{\n{guard}  return at::native::{kernel.kernel}({call});\n}}")
                lines.append(f'  m.impl("{f.func.name}", TORCH_FN({name}));')
        blocks.append(f"TORCH_LIBRARY_IMPL(aten, {key}, m) {{\n" + "\n".join(lines) + "\n}")
    print("// Generated by gen_structured_ops.py from torch's native_functions.yaml: do not edit.")
    print("// Sparse-layout kernels CPU and CUDA share, for foo's sparse keys (see SparseFallback.cpp).")
    print("#include <ATen/DeviceGuard.h>")
    print("#include <c10/core/DeviceGuard.h>")
    print("#include <torch/library.h>\n")
    for inc in sorted(includes):
        print(f"#include {inc}")
    print("\nnamespace foo::aten {\nnamespace {\n")
    print("// Each sets the device guard CUDA's generated wrapper sets (device_guard above).")
    print("\n\n".join(wrappers) + "\n")
    print("\n\n".join(blocks))
    print("\n}  // namespace\n}  // namespace foo::aten")


# Stub headers whose kernels are not ATen's dense CPU kernels (quantized,
# nested), or that clash with another (group_norm.h and layer_norm.h name
# their kernel types alike; foo has its own normalization kernels), and
# CPU's BLAS stubs, which only CPU code calls.
STUB_HEADER_EXCLUDED = ("quantized", "nested", "transformers", "group_norm.h", "layer_norm.h", "CPUBlas.h")
# Stubs foo registers itself (WindowKernels.cpp).
STUB_EXCLUDED = {"kaiser_window_stub"}


def declared_stubs():
    """(header, stub) for each DispatchStub the installed headers declare."""
    import re
    root = os.path.join(os.path.dirname(torchgen.__file__), "..", "torch", "include")
    native = os.path.join(root, "ATen", "native")
    found = []
    for dirpath, _, files in os.walk(native):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if not name.endswith(".h") or any(x in rel for x in STUB_HEADER_EXCLUDED):
                continue
            text = open(path).read()
            for m in re.finditer(r"^\s*DECLARE_DISPATCH\(", text, re.M):
                depth, end = 1, m.end()
                while depth:
                    depth += {"(": 1, ")": -1}.get(text[end], 0)
                    end += 1
                stub = text[m.end():end - 1].rsplit(",", 1)[1].strip()
                if stub not in STUB_EXCLUDED:
                    found.append((rel, stub))
    return sorted(set(found))


def libtorch_symbols(demangle: bool = False) -> str:
    import subprocess
    lib = os.path.join(os.path.dirname(torchgen.__file__), "..", "torch", "lib", "libtorch_cpu.so")
    return subprocess.run(["nm", "-D", "--defined-only"] + (["-C"] if demangle else []) + [lib],
                          capture_output=True, text=True, check=True).stdout


def exported_stubs():
    """The declared stubs that libtorch_cpu exports with a CPU kernel (some
    headers declare stubs whose objects are not exported, as
    avg_pool3d_backward_kernel, or that have no CPU kernel, as sub_stub)."""
    symbols = set(libtorch_symbols().split())

    def has_cpu_kernel(stub):
        kind = f"{stub}_DECLARE_DISPATCH_type"
        return any(s.endswith(f"{len(kind)}{kind}EE7DEFAULTE") for s in cpu_defaults)

    cpu_defaults = [s for s in symbols if s.endswith("_DECLARE_DISPATCH_typeEE7DEFAULTE")]
    return [(h, stub) for h, stub in declared_stubs()
            if f"_ZN2at6native{len(stub)}{stub}E" in symbols and has_cpu_kernel(stub)]


def cpu_capability_defines() -> list:
    """The HAVE_*_CPU_DEFINITION macros torch was built with. DispatchStub.h
    declares one kernel pointer per CPU capability under them, and an
    extension does not get them from torch's headers: calling a stub's CPU
    kernel from foo needs the same declarations as libtorch's, or the call
    links against a DispatchStubImpl::get_call_ptr that does not exist."""
    import platform
    import re
    m = re.search(r"DispatchStubImpl::get_call_ptr\(c10::DeviceType((?:, void\*)*)\)", libtorch_symbols(demangle=True))
    extra = m.group(1).count("void*") - 1
    by_machine = {"x86_64": ["AVX512", "AVX2"], "aarch64": ["SVE"], "ppc64le": ["VSX"], "s390x": ["ZVECTOR"]}
    wanted = by_machine.get(platform.machine(), [])
    slots = {"SVE": 2}
    chosen = [c for c in wanted if extra > 0]
    assert sum(slots.get(c, 1) for c in chosen) == extra, f"unknown CPU capabilities: {extra} extra kernel pointers"
    return [f"HAVE_{c}_CPU_DEFINITION" for c in chosen]


def print_stubs() -> None:
    stubs = exported_stubs()
    print("// Generated by gen_structured_ops.py from torch's installed headers: do not edit.")
    print("// foo entries for ATen's DispatchStubs, queueing their CPU kernels (see QueuedStubs.h).")
    print("// The CPU capabilities torch was built with, before DispatchStub.h (see cpu_capability_defines).")
    for define in cpu_capability_defines():
        print(f"#define {define}")
    print('#include "aten/QueuedStubs.h"\n')
    for header in sorted({h for h, _ in stubs}):
        print(f"#include <{header}>")
    print("\nnamespace foo::aten {\n")
    print("// How many of the stubs got a foo entry (the others take an argument no carrying rule covers).")
    print("int register_queued_stubs() {")
    print("  int n = 0;")
    for _, stub in stubs:
        print(f"  n += register_queued_stub<at::native::{stub}>();")
    print("  return n;\n}\n")
    print("namespace {\nconst int registered = register_queued_stubs();\n}  // namespace\n")
    print("int queued_stub_count() { return registered; }\n")
    print("}  // namespace foo::aten")


# Operators left to their foo kernels or the fallback although their host
# function is shared, with the reason.
HOST_EXCLUDED_PREFIXES = (
    # Not dense strided kernels.
    "quantize", "dequantize", "fake_quantize", "_fake_quantize", "_nested",
    # Composite-like fast paths that branch on the device type themselves.
    "_transformer_encoder_layer_fwd",
    # Sparse conversions: SparseOps.cpp registers them.
    "_to_sparse",
    # Its stub is not queued (group_norm.h, STUB_HEADER_EXCLUDED).
    "native_group_norm_backward",
    # Fallback.cpp registers them (their composite kernels would win otherwise).
    "addr", "mish_backward", "linalg__powsum",
    # Element-wise operators of several inputs whose dtypes may differ: CPU's
    # loops take operands converted to the common dtype, a conversion
    # TensorIterator makes only for CPU tensors (QueuedStubs.h).
    "floor_divide", "logical_", "rsub", "remainder", "__lshift__", "__ilshift__", "__rshift__", "__irshift__",
    "huber_loss", "smooth_l1_loss_backward", "hardtanh_backward", "hardswish_backward", "_prelu_kernel", "glu_",
    "logit_backward",
    # Likewise for one input: an integral input computed in float.
    "logit",
    # Their host code reaches stubs that have no CPU kernel (CUDA's only, as
    # index_put_with_sort_stub) or checks the device type itself (mode).
    "_index_put_impl_", "cholesky_inverse", "linalg_matrix_exp", "segment_reduce", "_segment_reduce_backward",
    "linalg_householder_product", "mode",
)


def hand_written_names() -> set:
    """Every string literal in foo's hand-written operator files: an operator
    named there has a foo kernel of its own (or a reason to stay with the
    fallback)."""
    import re
    names = set()
    # (KernelChecks.cpp and Fallback.cpp name operators they check or treat
    # specially, not ones they run.)
    generated = {"StructuredOps.cpp", "DeviceCheckTable.cpp", "SparseOps.cpp", "QueuedStubList.cpp", "HostOps.cpp",
                 "KernelChecks.cpp", "Fallback.cpp"}
    here = os.path.dirname(os.path.abspath(__file__))
    for name in os.listdir(here):
        if name.endswith(".cpp") and name not in generated:
            names.update(m.removeprefix("aten::") for m in re.findall(r'"([\w.:]+)"', open(os.path.join(here, name)).read()))
    return names


def host_ops(parsed):
    """The plain (not structured) operators whose host function CPU shares
    with CUDA (so it is device-generic: it checks, warns, sizes outputs and
    calls DispatchStubs), that foo does not run otherwise, that return no
    views and that CudaDtypes.cpp has no dtype rules for. (A function CPU
    shares with Meta only may still write data on the host: eye_out_cpu.)"""
    cpu, cuda = parsed.backend_indices[DispatchKey.CPU], parsed.backend_indices[DispatchKey.CUDA]
    taken = hand_written_names()
    here = os.path.dirname(os.path.abspath(__file__))
    import re
    dtype_rules = set(re.findall(r'"aten::(\w+)"', open(os.path.join(here, "CudaDtypes.cpp")).read()))
    for f in parsed.native_functions:
        on_cpu = cpu.get_kernel(f)
        if on_cpu is None or f.structured:
            continue
        on_cuda = cuda.get_kernel(f)
        shared = on_cuda is not None and on_cuda.kernel == on_cpu.kernel
        name = str(f.func.name)
        if (not shared or name in taken or str(f.func.name.name) in taken or str(f.func.name.name.base) in dtype_rules
                or name.startswith(HOST_EXCLUDED_PREFIXES) or any(r.annotation and not r.annotation.is_write
                                                                    for r in f.func.returns)):
            continue
        yield f, on_cpu


def print_host() -> None:
    parsed = parsed_yaml()
    wrappers, lines, includes = [], [], set()
    for f, kernel in host_ops(parsed):
        includes.add(f"<ATen/ops/{f.root_name}_native.h>")
        with local.parametrize(use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                               use_ilistref_for_tensor_lists=f.part_of_structured_group):
            sig = NativeSignature(f.func, symint=kernel.supports_symint())
            name = f"host_{f.func.name.unambiguous_name()}"
            call = ", ".join(b.name for b in sig.arguments())
            wrappers.append(f"{sig.defn(name=name)} {{\n"
                            f'  HostOpScope scope("aten::{f.func.name.name}");\n'
                            f"{device_guard(f, sig)}"
                            f"  return at::native::{kernel.kernel}({call});\n}}")
            lines.append(f'  m.impl("{f.func.name}", TORCH_FN({name}));')
    print("// Generated by gen_structured_ops.py from torch's native_functions.yaml: do not edit.")
    print("// Operators whose CPU/CUDA host code runs on foo at the call (see QueuedStubs.h).")
    print("#include <ATen/DeviceGuard.h>")
    print("#include <c10/core/DeviceGuard.h>")
    print("#include <torch/library.h>\n")
    print('#include "aten/QueuedStubs.h"\n')
    for inc in sorted(includes):
        print(f"#include {inc}")
    print("\nnamespace foo::aten {\nnamespace {\n")
    print("\n\n".join(wrappers) + "\n")
    print("TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n" + "\n".join(lines) + "\n}")
    print("\n}  // namespace\n}  // namespace foo::aten")


if __name__ == "__main__":
    {"ops": print_ops, "device-checks": print_device_checks, "sparse": print_sparse, "stubs": print_stubs,
     "host": print_host}[sys.argv[1]]()

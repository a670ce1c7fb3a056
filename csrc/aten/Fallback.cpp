// The global fallback: any operator without a foo kernel runs ATen's CPU
// implementation on CPU tensors that alias the foo memory (no copy of the
// inputs), in stream order, in one of three ways (FallbackStrategies.h).
//
// CPU tensors among the arguments (scalars, index tensors) are copied when
// the operator is called: the kernel must see their values as of the call.
#include "aten/Fallback.h"

#include <optional>
#include <string>

#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/FallbackChecks.h"
#include "aten/FallbackLog.h"
#include "aten/FallbackMetaCache.h"
#include "aten/FallbackStrategies.h"
#include "aten/FallbackWidening.h"
#include "aten/KernelChecks.h"
#include "aten/OpCounts.h"
#include "aten/OperatorName.h"

namespace foo::aten {

using torch::jit::Stack;

void foo_cpu_fallback(const c10::OperatorHandle& op, Stack* stack) {
  std::string name = full_name(op.operator_name());
  fallback::note_fallback(name);
  const auto& schema = op.schema();
  size_t num_args = schema.arguments().size();
  Stack args(stack->end() - num_args, stack->end());
  c10::Device device = fallback::common_device(op, name, args);
  c10::DeviceGuard guard(device);
  if (fallback::returns_views(schema)) return fallback::run_views(op, stack, num_args);
  fallback::check_written_arguments_on_device(schema, args, device);
  fallback::check_written_arguments_do_not_partly_overlap(schema, args, name);
  check_fallback_arguments(name, args);
  fallback::check_no_quantized_arguments(schema, args, name);
  fallback::Widening widening = fallback::widening_for(op, args);
  if (!fallback::inexact_meta(op)) {
    if (auto meta = cached_meta_results(op, args, &fallback::meta_results)) {
      fallback::check_no_quantized_results(name, *meta);
      return fallback::run_queued(op, stack, num_args, device, *meta, widening);
    }
  }
  fallback::run_synchronously(op, stack, num_args, device, widening);
  // Listed once it has produced results the host waited for: a call whose
  // arguments the CPU kernel refuses is an error at the call, as on CUDA.
  note_synchronizing(name);
}

namespace {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&foo_cpu_fallback>()); }

// Operators that CPU and CUDA each run with a kernel of their own but that
// also have a composite (decomposed) kernel, which the dispatcher would pick
// for foo. The decompositions compute in the input's precision where the
// kernels accumulate in float, so foo runs the CPU kernel, as CUDA runs its
// own. The others of their kind have foo kernels: native_group_norm and
// native_layer_norm (Normalization.cpp), all and any
// (generated/StructuredOps.cpp). tests/test_dtypes.py derives the list from
// native_functions.yaml and fails if one is missing.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"mish_backward", "addr", "addr.out", "linalg__powsum"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&foo_cpu_fallback>());
  }
}

// Operators whose only kernel for other devices is a composite one that
// refuses them by device type, as mode's out= form does ("mode only supports
// CPU, CUDA and XPU device type"): CUDA passes its check, so foo runs CPU's
// kernel instead.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&foo_cpu_fallback>());
}

}  // namespace

}  // namespace foo::aten

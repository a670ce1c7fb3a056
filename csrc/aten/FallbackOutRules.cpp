#include "aten/FallbackOutRules.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/ScalarType.h>
#include <c10/util/strides.h>

#include "aten/FallbackArguments.h"

namespace foo::aten::fallback {
namespace {

using Stack = torch::jit::Stack;

// Whether the operator's meta function is one of torch's Python ones
// (torch/_meta_registrations.py), not ATen's C++ one: a structured out=
// form's C++ meta function gives a resized out= tensor the layout CPU's
// kernel gives it (resize_out), a Python one written with out_wrapper
// leaves it contiguous.
bool has_python_meta(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static std::unordered_map<std::string, bool> known;
  const std::string name = op.operator_name().name + "." + op.operator_name().overload_name;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(name); it != known.end()) return it->second;
  bool python = false;
  std::istringstream table(op.dumpComputedTable());
  for (std::string line; std::getline(table, line);) {
    if (line.rfind("Meta: ", 0) == 0) python = line.find(".py:") != std::string::npos;
  }
  return known.emplace(name, python).first->second;
}

// out= kernels of CPU, not structured, that resize an out= tensor with
// resize_output and copy a fresh result into it, so that it ends
// contiguous whatever a fresh result's strides: the FFTs' always,
// householder_product's when the out= tensor had elements (an empty one it
// fills in place, column-major).
bool resized_out_is_contiguous(const c10::OperatorHandle& op, const Stack& args) {
  const auto& name = op.operator_name();
  if (name.overload_name != "out") return false;
  static constexpr std::string_view kFfts[] = {"aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c"};
  if (std::find(std::begin(kFfts), std::end(kFfts), name.name) != std::end(kFfts)) return true;
  return name.name == "aten::linalg_householder_product" && args.back().toTensor().numel() > 0;
}

// Other out= kernels of CPU under a Python meta function give a resized
// out= tensor the strides of a fresh result (column-major for most of
// linalg), where out_wrapper leaves it contiguous: those of the functional
// form's meta result, when its sizes are the out= form's.
void take_fresh_result_strides(const Stack& fresh, Stack& meta) {
  for (size_t r = 0; r < meta.size(); ++r) {
    if (meta[r].toTensor().sizes() != fresh[r].toTensor().sizes()) return;
  }
  for (size_t r = 0; r < meta.size(); ++r) {
    const at::Tensor& m = meta[r].toTensor();
    meta[r] = at::empty_strided(m.sizes(), fresh[r].toTensor().strides(), m.options());
  }
}

// A result that cannot be cast to its out= tensor's dtype is refused by
// CPU's kernel, at the call; many meta functions do not check it. Such a
// call runs synchronously, so that CPU's kernel raises its own error at the
// call.
bool some_result_cannot_be_cast_to_its_out(const Stack& fresh, const Stack& meta) {
  for (size_t r = 0; r < meta.size(); ++r) {
    if (!c10::canCast(fresh[r].toTensor().scalar_type(), meta[r].toTensor().scalar_type())) return true;
  }
  return false;
}

// out= kernels of CPU that size their out= tensor with Tensor::resize_, not
// ATen's resize_output: a resized one becomes contiguous, without the
// resize warning (tests/test_out_forms.py compares the warnings with CPU's).
bool resizes_with_resize_(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  if (name.overload_name != "out") return false;
  static constexpr std::string_view kNames[] = {"aten::addbmm", "aten::im2col", "aten::max_unpool2d",
                                                "aten::max_unpool3d", "aten::narrow_copy"};
  return std::find(std::begin(kNames), std::end(kNames), name.name) != std::end(kNames);
}

// What CPU's out= kernels check of their out= tensor and these operators'
// meta functions do not, checked here so that it raises at the call:
//  - max_unpool3d: one of the result's sizes (so kept) must be contiguous;
//  - normal(mean tensor, std number): the out= tensor's sizes must
//    broadcast with the mean's (its CPU kernel sizes the result so).
void check_out_as_cpu_kernels_do(const c10::OperatorHandle& op, const Stack& args, const Stack& meta) {
  const auto& name = op.operator_name();
  if (name.overload_name == "out" && name.name == "aten::max_unpool3d") {
    const at::Tensor& out = args.back().toTensor();
    TORCH_CHECK(out.sizes() != meta.at(0).toTensor().sizes() || out.is_contiguous(), "output must be contiguous");
  } else if (name.name == "aten::normal" && name.overload_name == "Tensor_float_out") {
    (void)at::infer_size(args.at(0).toTensor().sizes(), args.back().toTensor().sizes());
  }
}

}  // namespace

bool settle_out_results(const c10::OperatorHandle& op, const Stack& args, const std::optional<Stack>& fresh,
                        Stack& meta) {
  check_out_as_cpu_kernels_do(op, args, meta);
  if (!fresh) return true;
  if (some_result_cannot_be_cast_to_its_out(*fresh, meta)) return false;
  if (has_python_meta(op) && !resized_out_is_contiguous(op, args)) take_fresh_result_strides(*fresh, meta);
  return true;
}

void shape_out_argument(const c10::OperatorHandle& op, const at::Tensor& out, const at::Tensor& m) {
  if (resizes_with_resize_(op)) {
    if (out.sizes() != m.sizes()) give_layout(out, m.sizes(), c10::contiguous_strides(m.sizes()));
  } else if (at::native::resize_output_check(out, m.sizes())) {
    give_layout(out, m.sizes(), m.strides());
  }
}

}  // namespace foo::aten::fallback

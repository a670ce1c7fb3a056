#include "aten/CudaDtypes.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include <c10/util/Exception.h>

namespace foo::aten {
namespace {

using at::ScalarType;

using Dtypes = std::vector<ScalarType>;

const Dtypes kIntegral = {ScalarType::Byte, ScalarType::Char, ScalarType::Short, ScalarType::Int, ScalarType::Long};
const Dtypes kReducedFloat = {ScalarType::Half, ScalarType::BFloat16};

// The CUDA kernels' missing dtypes, by operator. Ops composed of these
// (matmul, einsum, linear, conv_transpose, avg_pool1d, ...) inherit them.
const std::unordered_map<std::string_view, Dtypes>& cuda_lacks() {
  static const std::unordered_map<std::string_view, Dtypes> table = {
      // cuBLAS has no integer GEMM behind these.
      {"aten::mm", kIntegral}, {"aten::addmm", kIntegral}, {"aten::_addmm_activation", kIntegral},
      {"aten::bmm", kIntegral}, {"aten::baddbmm", kIntegral}, {"aten::addbmm", kIntegral},
      {"aten::mv", kIntegral}, {"aten::addmv", kIntegral}, {"aten::dot", kIntegral}, {"aten::vdot", kIntegral},
      {"aten::convolution_overrideable", {ScalarType::Long}},
      {"aten::avg_pool2d", {ScalarType::Long}}, {"aten::avg_pool3d", {ScalarType::Long}},
      {"aten::max_pool2d_with_indices", kIntegral}, {"aten::max_pool3d_with_indices", kIntegral},
      // CPU's uint8 resampling is a CPU-only fast path.
      {"aten::upsample_bilinear2d", {ScalarType::Byte}}, {"aten::upsample_bicubic2d", {ScalarType::Byte}},
      {"aten::_upsample_bilinear2d_aa", {ScalarType::Byte}},
      {"aten::igamma", kReducedFloat}, {"aten::igammac", kReducedFloat}, {"aten::angle", kReducedFloat},
      {"aten::histc", kReducedFloat},
      {"aten::aminmax", {ScalarType::ComplexHalf, ScalarType::ComplexFloat, ScalarType::ComplexDouble}},
      // CUDA has no histogram kernel at all.
      {"aten::histogram", {ScalarType::Float, ScalarType::Double}},
      {"aten::_histogramdd_bin_edges", {ScalarType::Float, ScalarType::Double}},
      {"aten::_histogramdd_from_bin_cts", {ScalarType::Float, ScalarType::Double}},
      {"aten::_histogramdd_from_bin_tensors", {ScalarType::Float, ScalarType::Double}},
  };
  return table;
}

struct Widening {
  Dtypes from;
  ScalarType to;
};
using Widenings = std::vector<Widening>;

const Widenings kComplexHalf = {{{ScalarType::ComplexHalf}, ScalarType::ComplexFloat}};
const Widenings kReducedToFloat = {{kReducedFloat, ScalarType::Float}};
const Widenings kHalfToFloat = {{{ScalarType::Half}, ScalarType::Float}};

// Dtypes CUDA's kernels take and CPU's do not, by operator, and the dtype
// the CPU kernel computes in instead (as wide as CUDA's own arithmetic for
// them: complex32 and half math runs in float on CUDA too).
const std::unordered_map<std::string_view, Widenings>& cpu_lacks() {
  static const std::unordered_map<std::string_view, Widenings> table = {
      {"aten::acos", kComplexHalf}, {"aten::acosh", kComplexHalf}, {"aten::asin", kComplexHalf},
      {"aten::asinh", kComplexHalf}, {"aten::atan", kComplexHalf}, {"aten::atanh", kComplexHalf},
      {"aten::cos", kComplexHalf}, {"aten::cosh", kComplexHalf}, {"aten::sin", kComplexHalf},
      {"aten::sinh", kComplexHalf}, {"aten::tan", kComplexHalf}, {"aten::tanh", kComplexHalf},
      {"aten::exp", kComplexHalf}, {"aten::log", kComplexHalf}, {"aten::sqrt", kComplexHalf},
      {"aten::rsqrt", kComplexHalf}, {"aten::sigmoid", kComplexHalf}, {"aten::angle", kComplexHalf},
      {"aten::div", kComplexHalf}, {"aten::pow", kComplexHalf}, {"aten::lerp", kComplexHalf},
      {"aten::logaddexp", kComplexHalf}, {"aten::sum", kComplexHalf}, {"aten::prod", kComplexHalf},
      {"aten::convolution_overrideable", kComplexHalf},
      {"aten::trace", {{{ScalarType::ComplexHalf}, ScalarType::ComplexFloat}, {{ScalarType::Bool}, ScalarType::Long}}},
      {"aten::abs", {{{ScalarType::Bool}, ScalarType::Byte}}},
      {"aten::histc", {{kIntegral, ScalarType::Double}}},
      {"aten::avg_pool3d", kReducedToFloat}, {"aten::avg_pool3d_backward", kReducedToFloat},
      {"aten::_upsample_bilinear2d_aa", kReducedToFloat},
      {"aten::_upsample_bilinear2d_aa_backward", kReducedToFloat},
      {"aten::multi_margin_loss", kReducedToFloat}, {"aten::multi_margin_loss_backward", kReducedToFloat},
      {"aten::multilabel_margin_loss_forward", kReducedToFloat},
      {"aten::multilabel_margin_loss_backward", kReducedToFloat},
      {"aten::round", kHalfToFloat}, {"aten::polygamma", kHalfToFloat},
  };
  return table;
}

bool contains(const Dtypes& set, ScalarType t) { return std::find(set.begin(), set.end(), t) != set.end(); }

// "aten::div.Tensor" -> "aten::div": the tables hold operators, not overloads.
std::string_view without_overload(std::string_view op_name) {
  size_t ns = op_name.find("::");
  size_t dot = op_name.find('.', ns == std::string_view::npos ? 0 : ns + 2);
  return dot == std::string_view::npos ? op_name : op_name.substr(0, dot);
}

}  // namespace

bool has_dtype_rules(std::string_view op_name) {
  op_name = without_overload(op_name);
  return cuda_lacks().count(op_name) > 0 || cpu_lacks().count(op_name) > 0;
}

void check_cuda_has_kernel(std::string_view op_name, ScalarType dtype) {
  op_name = without_overload(op_name);
  const auto& table = cuda_lacks();
  auto it = table.find(op_name);
  TORCH_CHECK(it == table.end() || !contains(it->second, dtype), op_name, " is not implemented for '",
              c10::toString(dtype), "' on foo, as on CUDA (CUDA has no kernel for this dtype)");
}

std::optional<ScalarType> wider_compute_dtype(std::string_view op_name, ScalarType dtype) {
  op_name = without_overload(op_name);
  const auto& table = cpu_lacks();
  auto it = table.find(op_name);
  if (it == table.end()) return std::nullopt;
  for (const Widening& w : it->second) {
    if (contains(w.from, dtype)) return w.to;
  }
  return std::nullopt;
}

OpDtypeRules::OpDtypeRules(std::string_view op_name) : name_(op_name), any_(has_dtype_rules(op_name)) {
  if (!any_) return;
  const auto& lacks = cuda_lacks();
  auto it = lacks.find(without_overload(op_name));
  for (size_t i = 0; i < cuda_lacks_.size(); ++i) {
    auto dtype = static_cast<ScalarType>(i);
    cuda_lacks_[i] = it != lacks.end() && contains(it->second, dtype);
    wider_[i] = foo::aten::wider_compute_dtype(op_name, dtype);
  }
}

at::Tensor widened(const at::Tensor& t, ScalarType from, ScalarType to) {
  return t.defined() && t.scalar_type() == from ? t.to(to) : t;
}

at::ScalarType widened_dtype(ScalarType result, ScalarType from, ScalarType to) {
  if (result == from) return to;
  if (c10::isComplexType(from) && c10::isComplexType(to) && result == c10::toRealValueType(from)) {
    return c10::toRealValueType(to);
  }
  return result;
}

}  // namespace foo::aten

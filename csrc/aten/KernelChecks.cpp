#include "aten/KernelChecks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include <ATen/Dispatch_v2.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Gelu.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

namespace foo::aten {
namespace {

using Stack = torch::jit::Stack;

// ------------------------------------------------------- structured operators

void mm_dtypes(const at::Tensor&, const std::vector<at::Tensor>& t) {
  TORCH_CHECK(t[0].dtype() == t[1].dtype(), "expected m1 and m2 to have the same dtype, but got: ", t[0].dtype(),
              " != ", t[1].dtype());
}

// mean's out= tensor: CPU's kernel sums the input into it, which refuses a
// dtype the input's cannot be cast to.
void mean_out_dtype(const at::Tensor& out, const std::vector<at::Tensor>& t) {
  TORCH_CHECK(c10::canCast(t[0].scalar_type(), out.scalar_type()), "result type ", t[0].scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
}

// norm's out= tensor: CPU's kernel computes linalg_vector_norm into it,
// whose result is floating (the input's real dtype, without dtype=), so an
// integral one is refused.
void norm_out_dtype(const at::Tensor& out, const std::vector<at::Tensor>& t) {
  TORCH_CHECK(c10::isFloatingType(out.scalar_type()) || c10::isComplexType(out.scalar_type()),
              "Expected out tensor to have dtype ",
              c10::scalarTypeToTypeMeta(c10::toRealValueType(t[0].scalar_type())), ", but got ", out.dtype(),
              " instead");
}

// bmm, baddbmm: every operand in the first one's dtype (checked by the
// kernel, which an empty output skips).
void batched_dtypes(const at::Tensor& out, const std::vector<at::Tensor>& t) {
  if (out.numel() == 0) return;
  for (size_t i = 1; i < t.size(); ++i) {
    TORCH_CHECK(t[i].scalar_type() == t[0].scalar_type(), "expected scalar type ", t[0].scalar_type(),
                " but found ", t[i].scalar_type());
  }
}

void addmv_dtypes(const at::Tensor&, const std::vector<at::Tensor>& t) {
  TORCH_CHECK(t[0].scalar_type() == t[1].scalar_type() && t[1].scalar_type() == t[2].scalar_type(),
              "addmv input tensors must have the same dtype, but got ", t[0].scalar_type(), ", ", t[1].scalar_type(),
              ", and ", t[2].scalar_type());
}

// ------------------------------------------------------- fallback operators

const at::Tensor& tensor_at(const Stack& args, size_t i) { return args[i].toTensor(); }

void dot_dtypes(const std::string&, const Stack& args) {
  const at::Tensor& a = tensor_at(args, 0);
  const at::Tensor& b = tensor_at(args, 1);
  // (vdot's message says "dot" too.)
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              a.scalar_type(), " and ", b.scalar_type());
}

// masked_fill_: a boolean mask, and a value the tensor's dtype holds (CUDA
// converts it on the host, before the launch). A foo tensor's value is
// read by the kernel, as CUDA's kernel would read it.
void masked_fill_arguments(const std::string&, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  const at::Tensor& mask = tensor_at(args, 1);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  if (args[2].isTensor()) {
    const at::Tensor& value = args[2].toTensor();
    TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                value.dim(), " dimension(s).");
    if (value.is_cpu()) check_fill_value(value.item(), self.scalar_type());
  } else {
    check_fill_value(args[2].toScalar(), self.scalar_type());
  }
}

void masked_scatter_arguments(const std::string&, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  const at::Tensor& mask = tensor_at(args, 1);
  const at::Tensor& source = tensor_at(args, 2);
  at::assert_no_internal_overlap(self);
  // (CPU's message, space and all.)
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  TORCH_CHECK(mask.dtype() == at::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  (void)at::expand_inplace(self, mask, "masked_scatter_");
}

// masked_select(.out): the result is indexing's output, so indexing's
// overlap checks apply to the out= tensor.
void masked_select_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  const at::Tensor& mask = tensor_at(args, 1);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  (void)at::infer_size_dimvector(mask.sizes(), self.sizes());
  if (name != "aten::masked_select.out") return;
  const at::Tensor& out = tensor_at(args, 2);
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
}

// kthvalue(.values): k within the reduced dimension, which has elements;
// values do not overlap the input.
void kthvalue_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  int64_t k = args[1].toInt();
  int64_t dim = at::maybe_wrap_dim(args[2].toInt(), self.dim(), /*wrap_scalar=*/true);
  int64_t slice = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");
  TORCH_CHECK(k >= 1 && k <= slice, "kthvalue(): selected number k out of range for dimension ", dim);
  if (name != "aten::kthvalue.values") return;
  at::assert_no_overlap(self, tensor_at(args, 4));
  TORCH_CHECK(tensor_at(args, 4).scalar_type() == self.scalar_type(), "output values must be of same type as input");
  TORCH_CHECK(tensor_at(args, 5).scalar_type() == at::kLong, "output indices must be of scalar type Long");
}

// mode(.values): out= values in the input's dtype and Long indices; a
// dimension in range, with elements.
void mode_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  if (name == "aten::mode.values") {
    for (auto [i, dtype, what] : {std::tuple{3, self.scalar_type(), "values"}, std::tuple{4, at::kLong, "indices"}}) {
      TORCH_CHECK(tensor_at(args, i).scalar_type() == dtype, "expected scalar type '", dtype, "' but got '",
                  tensor_at(args, i).scalar_type(), "' for ", what, " output");
    }
  }
  int64_t dim = at::maybe_wrap_dim(args[1].toInt(), self.dim());
  at::native::zero_numel_check_dims(self, dim, "mode()");
}

// median / nanmedian along a dimension: one with elements; out= values in
// the input's dtype and Long indices.
void median_dim_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  int64_t dim = at::maybe_wrap_dim(args[1].toInt(), self.dim());
  if (name.ends_with(".dim_values")) {
    at::checkScalarType("median", {tensor_at(args, 4), "indices", 1}, at::kLong);
    at::checkSameType("median", {tensor_at(args, 3), "values", 0}, {self, "self", 2});
  }
  at::native::zero_numel_check_dims(self, dim, "median()");
}

// bucketize: searchsorted's checks, over one-dimensional boundaries.
void bucketize_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& boundaries = tensor_at(args, 1);
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  if (name != "aten::bucketize.Tensor_out") return;
  at::native::searchsorted_pre_check(boundaries, tensor_at(args, 0), tensor_at(args, 4), args[2].toBool(),
                                     args[3].toBool(), std::nullopt, at::Tensor());
}

// searchsorted(sorted_sequence, self, out_int32, right, side, sorter[, out]):
// the checks CPU's and CUDA's host code make before the search, on the
// output they would allocate (metadata only) and a number `self` as the
// 0-dim tensor they would make of it.
void searchsorted_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& boundaries = tensor_at(args, 0);
  const bool out_int32 = args[2].toBool();
  std::optional<std::string_view> side;
  if (!args[4].isNone()) side = args[4].toStringRef();
  const at::Tensor sorter = args[5].isNone() ? at::Tensor() : args[5].toTensor();
  const at::Tensor input = args[1].isTensor()
                               ? args[1].toTensor()
                               : at::empty({}, boundaries.options().dtype(args[1].toScalar().type()));
  const at::Tensor output = name.ends_with("_out")
                                ? tensor_at(args, 6)
                                : at::empty({0}, at::TensorOptions(c10::kMeta).dtype(out_int32 ? at::kInt : at::kLong));
  at::native::searchsorted_pre_check(boundaries, input, output, out_int32, args[3].toBool(), side, sorter);
}


// Structured operators with two outputs: their out= wrapper takes outputs
// of the results' dtypes only, in resize_out's words (torch's Python meta
// functions for them, which the fallback runs, cast or take any dtype).
void check_out_dtype(const at::Tensor& out, caffe2::TypeMeta expected) {
  TORCH_CHECK(out.dtype() == expected, "Expected out tensor to have dtype ", expected, ", but got ", out.dtype(),
              " instead");
}

void aminmax_out_arguments(const std::string&, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  check_out_dtype(tensor_at(args, 3), self.dtype());
  check_out_dtype(tensor_at(args, 4), self.dtype());
}

// sort.values(self, dim, descending, values, indices) and
// sort.values_stable(self, stable, dim, descending, values, indices).
void sort_out_arguments(const std::string& name, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  const size_t dim = name == "aten::sort.values_stable" ? 2 : 1;
  (void)at::maybe_wrap_dim(args[dim].toInt(), self.dim());
  check_out_dtype(tensor_at(args, dim + 2), self.dtype());
  check_out_dtype(tensor_at(args, dim + 3), caffe2::TypeMeta::Make<int64_t>());
}

// randperm into an out= tensor: n within what its dtype holds exactly
// (CUDA's host code makes the same check before it launches).
void randperm_out_arguments(const std::string&, const Stack& args) {
  int64_t n = args[0].toInt();
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::check_supported_max_int_with_precision(n, tensor_at(args, 2));
}

// logspace into an out= tensor of the right size: CUDA computes into a
// contiguous temporary and copies it into the out= tensor on the host,
// which refuses one whose elements share memory.
void logspace_out_arguments(const std::string&, const Stack& args) {
  const at::Tensor& out = tensor_at(args, 4);
  if (args[2].toInt() > 0 && out.numel() == args[2].toInt()) at::assert_no_internal_overlap(out);
}

// histc(self, bins, min, max[, out]): the range the host code picks before
// the kernel, finite and increasing. When min == max it is the input's
// extrema, which CUDA's host code reads from the device too (a wait).
void histc_arguments(const std::string&, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  double left = args[2].toScalar().to<double>();
  double right = args[3].toScalar().to<double>();
  if (left == right && self.numel() > 0) {
    auto [lo, hi] = at::aminmax(self);
    left = lo.item<double>();
    right = hi.item<double>();
  }
  if (left == right) {
    // CPU widens an empty range by one, or for float and double inputs to
    // the neighbouring representable values if those are farther.
    auto widen = [&](auto zero) {
      using T = decltype(zero);
      left = std::min(static_cast<double>(std::nexttoward(static_cast<T>(left), std::numeric_limits<T>::lowest())),
                      left - 1.);
      right = std::max(static_cast<double>(std::nexttoward(static_cast<T>(right), std::numeric_limits<T>::max())),
                       right + 1.);
    };
    if (self.scalar_type() == at::kDouble) {
      widen(0.0);
    } else if (self.scalar_type() == at::kFloat) {
      widen(0.0f);
    } else {
      left -= 1;
      right += 1;
    }
  }
  TORCH_CHECK(!(std::isinf(left) || std::isinf(right) || std::isnan(left) || std::isnan(right)),
              "torch.histc: range of [", left, ", ", right, "] is not finite");
  TORCH_CHECK(left < right, "torch.histc: max must be larger than min");
}

// _logcumsumexp: CUDA wraps the dimension on the host; CPU's kernel does.
void logcumsumexp_arguments(const std::string&, const Stack& args) {
  (void)at::maybe_wrap_dim(args[1].toInt(), tensor_at(args, 0).dim());
}

using FallbackCheck = void (*)(const std::string& name, const Stack& args);

const std::unordered_map<std::string, FallbackCheck>& fallback_checks() {
  static const std::unordered_map<std::string, FallbackCheck> table = {
      {"aten::dot", dot_dtypes},
      {"aten::vdot", dot_dtypes},
      {"aten::masked_fill_.Scalar", masked_fill_arguments},
      {"aten::masked_fill_.Tensor", masked_fill_arguments},
      {"aten::masked_fill.Scalar", masked_fill_arguments},
      {"aten::masked_fill.Tensor", masked_fill_arguments},
      {"aten::masked_scatter_", masked_scatter_arguments},
      {"aten::masked_select", masked_select_arguments},
      {"aten::masked_select.out", masked_select_arguments},
      {"aten::kthvalue", kthvalue_arguments},
      {"aten::kthvalue.values", kthvalue_arguments},
      {"aten::median.dim", median_dim_arguments},
      {"aten::median.dim_values", median_dim_arguments},
      {"aten::nanmedian.dim", median_dim_arguments},
      {"aten::nanmedian.dim_values", median_dim_arguments},
      {"aten::bucketize.Tensor", bucketize_arguments},
      {"aten::bucketize.Tensor_out", bucketize_arguments},
      {"aten::bucketize.Scalar", bucketize_arguments},
      {"aten::searchsorted.Tensor", searchsorted_arguments},
      {"aten::searchsorted.Tensor_out", searchsorted_arguments},
      {"aten::searchsorted.Scalar", searchsorted_arguments},
      {"aten::searchsorted.Scalar_out", searchsorted_arguments},
      {"aten::aminmax.out", aminmax_out_arguments},
      {"aten::sort.values", sort_out_arguments},
      {"aten::sort.values_stable", sort_out_arguments},
      {"aten::mode", mode_arguments},
      {"aten::mode.values", mode_arguments},
      {"aten::randperm.generator_out", randperm_out_arguments},
      {"aten::histc", histc_arguments},
      {"aten::histc.out", histc_arguments},
      {"aten::logspace.out", logspace_out_arguments},
      {"aten::_logcumsumexp", logcumsumexp_arguments},
      {"aten::_logcumsumexp.out", logcumsumexp_arguments},
  };
  return table;
}

}  // namespace

void check_fallback_arguments(const std::string& name, const Stack& args) {
  const auto& table = fallback_checks();
  auto it = table.find(name);
  if (it != table.end()) it->second(name, args);
}

TensorChecks structured_checks(std::string_view name) {
  if (name == "aten::mm") return mm_dtypes;
  if (name == "aten::bmm" || name == "aten::baddbmm") return batched_dtypes;
  if (name == "aten::addmv") return addmv_dtypes;
  if (name == "aten::mean.dim") return mean_out_dtype;
  if (name == "aten::norm.ScalarOpt_dim" || name == "aten::norm.ScalarOpt_dim_dtype") return norm_out_dtype;
  return nullptr;
}

void check_fill_value(const at::Scalar& value, at::ScalarType dtype) {
  // The conversion the kernel makes, which raises "value cannot be
  // converted to type ... without overflow".
  AT_DISPATCH_V2(dtype, "fill_", AT_WRAP([&] { (void)value.to<scalar_t>(); }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX),
                 at::kComplexHalf, at::kHalf, at::kBool, at::kBFloat16, AT_EXPAND(AT_FLOAT8_TYPES),
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
}

void check_gelu_approximate(std::string_view approximate) { (void)at::native::get_gelutype_enum(approximate); }

void check_nll_target(const at::Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
}

void check_convolution_dtypes(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(input.dtype() == weight.dtype(), "Input type (", input.dtype(), ") and weight type (", weight.dtype(),
              ") should be the same");
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(input.dtype() == bias->dtype(), "Input type (", input.dtype(), ") and bias type (", bias->dtype(),
                ") should be the same");
  }
}

}  // namespace foo::aten

// Which dtypes an operator takes on foo, decided as CUDA decides it where
// CUDA's kernels and CPU's cover different dtypes. Device-agnostic code takes
// its GPU path on foo, so foo accepts what CUDA accepts and refuses what CUDA
// refuses, although its kernels are CPU's:
//  - a dtype CUDA has a kernel for and CPU has not (complex32 math, integer
//    histc, half pooling, ...): the CPU kernel runs in a wider dtype and the
//    result is cast back;
//  - a dtype CPU has a kernel for and CUDA has not (integer matmul and
//    convolution, integer max pooling, ...): the call raises, as on CUDA.
// The table follows the dtypes PyTorch's OpInfo database lists for CUDA and
// CPU; tests/test_opinfo.py checks every entry against it.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

namespace foo::aten {

// Whether either table below names `op_name` (overload ignored): kernels
// ask once, so that operators without rules pay nothing per call.
bool has_dtype_rules(std::string_view op_name);

// Raises RuntimeError when CUDA has no kernel for `op_name` (e.g.
// "aten::mm"; an overload name is ignored) in `dtype`.
void check_cuda_has_kernel(std::string_view op_name, at::ScalarType dtype);

// The dtype the CPU kernel of `op_name` computes in when the call's dtype is
// one CUDA supports and CPU does not; nullopt when the CPU kernel takes it.
std::optional<at::ScalarType> wider_compute_dtype(std::string_view op_name, at::ScalarType dtype);

// One operator's rules, looked up once for every dtype: what
// check_cuda_has_kernel and wider_compute_dtype answer for it, without a
// lookup by name per call (a kernel called thousands of times per second
// holds one in a static).
class OpDtypeRules {
 public:
  explicit OpDtypeRules(std::string_view op_name);
  bool any() const { return any_; }  // has_dtype_rules
  void check_cuda_has_kernel(at::ScalarType dtype) const {
    if (C10_UNLIKELY(cuda_lacks_[index(dtype)])) foo::aten::check_cuda_has_kernel(name_, dtype);
  }
  std::optional<at::ScalarType> wider_compute_dtype(at::ScalarType dtype) const { return wider_[index(dtype)]; }

 private:
  static size_t index(at::ScalarType dtype) { return static_cast<size_t>(dtype); }
  std::string name_;
  bool any_;
  std::array<bool, static_cast<size_t>(at::ScalarType::NumOptions)> cuda_lacks_{};
  std::array<std::optional<at::ScalarType>, static_cast<size_t>(at::ScalarType::NumOptions)> wider_{};
};

// A copy of `t` in `to` when it is defined and of dtype `from`; else `t`.
at::Tensor widened(const at::Tensor& t, at::ScalarType from, at::ScalarType to);

// The dtype a result of dtype `result` has when the inputs are widened from
// `from` to `to`: `to` for `from`, and for complex ones the real parts
// likewise (angle and abs of complex32 give half).
at::ScalarType widened_dtype(at::ScalarType result, at::ScalarType from, at::ScalarType to);

}  // namespace foo::aten

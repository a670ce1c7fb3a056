#include "distributed/ReduceOps.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace foo::distributed {

void apply_nccl_reduce_rules(c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (op.op_ == c10d::ReduceOp::PREMUL_SUM) {
      TORCH_CHECK_VALUE(t.scalar_type() != at::kBool, "Cannot use ReduceOp.PREMUL_SUM with boolean inputs");
      TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()),
                       "PreMulSum Data type must be half, float, bfloat16 or double, not ", t.scalar_type());
    }
  }
  bool all_bool = !tensors.empty();
  for (const at::Tensor& t : tensors) all_bool = all_bool && t.scalar_type() == at::kBool;
  if (!all_bool) return;
  if (op.op_ == c10d::ReduceOp::SUM) op = c10d::ReduceOp(c10d::ReduceOp::MAX);
  if (op.op_ == c10d::ReduceOp::PRODUCT) op = c10d::ReduceOp(c10d::ReduceOp::MIN);
}

double premul_factor(c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return 1.0;
  auto* s = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s != nullptr, "fooccl: PREMUL_SUM without a factor");
  double factor = s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
  op = c10d::ReduceOp(c10d::ReduceOp::SUM);
  return factor;
}

int64_t integer_average(c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors, int size) {
  if (op.op_ != c10d::ReduceOp::AVG) return 0;
  bool integers = false;
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.scalar_type() != at::kBool, "Cannot use ReduceOp.AVG with boolean inputs");
    integers = integers || at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
  }
  if (!integers) return 0;
  op = c10d::ReduceOp(c10d::ReduceOp::SUM);
  return size;
}

void divide(const at::Tensor& t, int64_t divisor) {
  if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
    t.div_(divisor, "trunc");
  } else {
    t.div_(divisor);
  }
}

at::Tensor complex_as_real(const at::Tensor& t, const c10d::ReduceOp* op, const char* name) {
  if (!t.is_complex()) return t;
  if (op != nullptr) {
    const auto k = op->op_;
    TORCH_CHECK(k == c10d::ReduceOp::SUM || k == c10d::ReduceOp::AVG || k == c10d::ReduceOp::PREMUL_SUM, "fooccl ",
                name, " does not support this ReduceOp on complex tensors (SUM, AVG and PREMUL_SUM only, as NCCL)");
  }
  return at::view_as_real(t);
}

}  // namespace foo::distributed

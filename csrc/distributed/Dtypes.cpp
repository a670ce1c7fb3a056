#include "distributed/Dtypes.h"

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

namespace foo::distributed {
namespace {

bool nccl_has_type(c10::ScalarType type) {
  switch (type) {
    case c10::kChar:
    case c10::kByte:
    case c10::kBool:
    case c10::kInt:
    case c10::kLong:
    case c10::kHalf:
    case c10::kBFloat16:
    case c10::kFloat:
    case c10::kDouble:
    case c10::kFloat8_e5m2:
    case c10::kFloat8_e4m3fn:
    case c10::kFloat8_e5m2fnuz:
    case c10::kFloat8_e4m3fnuz:
      return true;
    default:
      return false;
  }
}

bool reduces(c10d::OpType op) {
  switch (op) {
    case c10d::OpType::ALLREDUCE:
    case c10d::OpType::ALLREDUCE_COALESCED:
    case c10d::OpType::REDUCE:
    case c10d::OpType::REDUCE_SCATTER:
    case c10d::OpType::_REDUCE_SCATTER_BASE:
    case c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED:
      return true;
    default:
      return false;
  }
}

}  // namespace

void check_exchangeable(const at::Tensor& t, c10d::OpType op) {
  TORCH_CHECK_TYPE(nccl_has_type(t.scalar_type()),
                   "Input tensor data type is not supported for fooccl process group: ", t.scalar_type());
  TORCH_CHECK(!(reduces(op) && c10::isFloat8Type(t.scalar_type())),
              "Float8 dtypes are not currently supported for fooccl reductions (as for NCCL's), got ",
              t.scalar_type());
}

at::Tensor as_gloo_type(const at::Tensor& t) {
  return c10::isFloat8Type(t.scalar_type()) ? t.view(c10::kByte) : t;
}

}  // namespace foo::distributed

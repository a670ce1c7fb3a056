#include "aten/Structured.h"

namespace foo::aten {

void check_on_device(c10::Device device, const at::Tensor& t, const char* op_name) {
  if (!t.defined() || t.device() == device) return;
  TORCH_CHECK(t.is_cpu() && t.dim() == 0, "Expected all tensors to be on the same device, but found at least two devices, ",
              device, " and ", t.device(), "! (", op_name, ")");
}

}  // namespace foo::aten

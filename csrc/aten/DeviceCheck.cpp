#include "aten/DeviceCheck.h"

namespace foo::aten {
namespace {

[[noreturn]] void fail(c10::Device device, const at::Tensor& t, const char* op_name) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ", device,
              " and ", t.device(), "! (when checking the arguments of ", op_name, ")");
}

}  // namespace

void check_same_device(c10::Device device, const at::Tensor& t, const char* op_name) {
  if (t.defined() && t.device() != device) fail(device, t, op_name);
}

void check_on_device_or_cpu_scalar(c10::Device device, const at::Tensor& t, const char* op_name) {
  if (t.defined() && t.device() != device && !(t.is_cpu() && t.dim() == 0)) fail(device, t, op_name);
}

}  // namespace foo::aten

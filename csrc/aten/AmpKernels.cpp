// The two operators torch.amp.GradScaler needs, as foo kernels: ATen's CPU
// implementations on the stream, so unscaling, the inf/nan check and the
// scale update never leave the device.
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <torch/library.h>

#include "aten/Launch.h"
#include "aten/Structured.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

void non_finite_check_and_unscale(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  const char* name = "aten::_amp_foreach_non_finite_check_and_unscale_";
  c10::Device device = found_inf.device();
  TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, name, ": found_inf must be a foo tensor, got one on ",
              device);
  check_same_device(device, inv_scale, name);
  // Checked at the call, as CUDA's kernel checks them before it launches.
  TORCH_CHECK(inv_scale.numel() == 1, "inv_scale must be a 1-element tensor.");
  TORCH_CHECK(found_inf.numel() == 1, "found_inf must be a 1-element tensor.");
  TORCH_CHECK(inv_scale.scalar_type() == at::kFloat, "inv_scale must be a float tensor.");
  TORCH_CHECK(found_inf.scalar_type() == at::kFloat, "found_inf must be a float tensor.");
  if (grads.empty()) return;
  std::vector<TensorInfo> kept;
  for (const at::Tensor& g : grads) {
    TORCH_CHECK(g.device() == device, name, ": every gradient must be on ", device, " like found_inf, but one is on ",
                g.device());
    TORCH_CHECK(g.layout() == at::kStrided, "one of scaled_grads was not a strided tensor.");
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), name, ": scaled_grads must be floating-point tensors, but one is ",
                g.scalar_type());
    kept.emplace_back(g);
  }
  launch_op(device.index(), name, [kept, f = TensorInfo(found_inf), s = TensorInfo(inv_scale)] {
    std::vector<at::Tensor> cpu;
    cpu.reserve(kept.size());
    for (const auto& g : kept) cpu.push_back(g.cpu());
    at::Tensor found = f.cpu();
    at::_amp_foreach_non_finite_check_and_unscale_(cpu, found, s.cpu());
  });
}

at::Tensor& update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char* name = "aten::_amp_update_scale_";
  c10::Device device = scale.device();
  check_same_device(device, growth_tracker, name);
  check_same_device(device, found_inf, name);
  TORCH_CHECK(scale.numel() == 1, "current_scale must be a 1-element tensor.");
  TORCH_CHECK(growth_tracker.numel() == 1, "growth_tracker must be a 1-element tensor.");
  TORCH_CHECK(found_inf.numel() == 1, "found_inf must be a 1-element tensor.");
  TORCH_CHECK(scale.scalar_type() == at::kFloat, "current_scale must be a float tensor.");
  TORCH_CHECK(growth_tracker.scalar_type() == at::kInt, "growth_tracker must be an int tensor.");
  TORCH_CHECK(found_inf.scalar_type() == at::kFloat, "found_inf must be a float tensor.");
  launch_op(device.index(), name,
            [s = TensorInfo(scale), g = TensorInfo(growth_tracker), f = TensorInfo(found_inf), growth_factor,
             backoff_factor, growth_interval] {
              at::Tensor cpu_scale = s.cpu();
              at::Tensor cpu_tracker = g.cpu();
              at::_amp_update_scale_(cpu_scale, cpu_tracker, f.cpu(), growth_factor, backoff_factor, growth_interval);
            });
  return scale;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(non_finite_check_and_unscale));
  m.impl("_amp_update_scale_", TORCH_FN(update_scale));
}

}  // namespace
}  // namespace foo::aten

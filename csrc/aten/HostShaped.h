// Kernels whose output shapes foo computes on the host: the caller
// allocates the outputs, and `compute` (run on the stream, on CPU aliases)
// returns the CPU results, each copied once into its output.
#pragma once

#include <optional>
#include <vector>

#include "aten/KernelTensor.h"
#include "aten/Launch.h"

namespace foo::aten {

template <class F>
void queue_into(c10::Device device, const char* op_name, const std::vector<at::Tensor>& outputs, F compute) {
  std::vector<std::optional<KernelTensor>> targets;
  bool any = false;
  for (const at::Tensor& t : outputs) {
    bool wanted = t.defined() && t.numel() > 0;
    any = any || wanted;
    targets.push_back(wanted ? std::optional<KernelTensor>(t) : std::nullopt);
  }
  if (!any) return;
  launch_op(device.index(), op_name, [targets = std::move(targets), compute = std::move(compute)] {
    std::vector<at::Tensor> results = compute();
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i] && results[i].defined()) targets[i]->cpu().copy_(results[i]);
    }
  });
}

}  // namespace foo::aten

#include "distributed/AllreduceInParts.h"

#include <vector>

#include "distributed/GlooWaits.h"

namespace foo::distributed {

c10::intrusive_ptr<c10d::Work> allreduce_in_parts(c10d::Backend& gloo, const at::Tensor& elements,
                                                  const c10d::AllreduceOptions& opts,
                                                  std::chrono::milliseconds timeout) {
  if (elements.nbytes() < kAllreduceInPartsFrom) {
    std::vector<at::Tensor> whole{elements};
    return gloo.allreduce(whole, opts);
  }
  int64_t n = elements.numel(), half = n / 2;
  std::vector<at::Tensor> first{elements.narrow(0, 0, half)};
  std::vector<at::Tensor> second{elements.narrow(0, half, n - half)};
  std::vector<c10::intrusive_ptr<c10d::Work>> parts{gloo.allreduce(first, opts)};
  try {
    parts.push_back(gloo.allreduce(second, opts));
  } catch (...) {
    drain(*parts[0]);
    throw;
  }
  wait_all(parts, timeout);
  return {};
}

}  // namespace foo::distributed

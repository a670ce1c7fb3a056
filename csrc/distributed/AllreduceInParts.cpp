#include "distributed/AllreduceInParts.h"

#include <vector>

#include "distributed/GlooWaits.h"

namespace foo::distributed {

c10::intrusive_ptr<c10d::Work> allreduce_in_parts(c10d::Backend& gloo, const at::Tensor& t,
                                                  const c10d::AllreduceOptions& opts,
                                                  std::chrono::milliseconds timeout) {
  if (t.nbytes() < kAllreduceInPartsFrom) {
    std::vector<at::Tensor> whole{t};
    return gloo.allreduce(whole, opts);
  }
  // The elements in memory order (the tensor is dense, in any memory format).
  at::Tensor elements = t.as_strided({t.numel()}, {1});
  int64_t half = t.numel() / 2;
  std::vector<at::Tensor> first{elements.narrow(0, 0, half)};
  std::vector<at::Tensor> second{elements.narrow(0, half, t.numel() - half)};
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

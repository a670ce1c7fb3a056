#include "distributed/AllreduceInParts.h"

#include <exception>
#include <vector>

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
  c10::intrusive_ptr<c10d::Work> first_work = gloo.allreduce(first, opts);
  c10::intrusive_ptr<c10d::Work> second_work;
  try {
    second_work = gloo.allreduce(second, opts);
  } catch (...) {
    try {
      first_work->wait(timeout);
    } catch (...) {
      // The failure to start the second part is the one to report.
    }
    throw;
  }
  try {
    first_work->wait(timeout);
  } catch (...) {
    try {
      second_work->wait(timeout);
    } catch (...) {
      // The first failure is the one to report.
    }
    throw;
  }
  return second_work;
}

}  // namespace foo::distributed

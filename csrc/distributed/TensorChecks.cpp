#include "distributed/TensorChecks.h"

#include <algorithm>

#include <c10/util/Exception.h>

namespace foo::distributed {

bool is_foo(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

bool all_cpu(const std::vector<at::Tensor>& ts) {
  return !ts.empty() && std::all_of(ts.begin(), ts.end(), [](const at::Tensor& t) { return t.is_cpu(); });
}

void check_single(const at::Tensor& t) {
  TORCH_CHECK_VALUE(is_foo(t) && t.layout() == c10::kStrided, "Tensors must be foo and dense");
  TORCH_CHECK_VALUE(t.is_contiguous(t.suggest_memory_format()), "Tensors must be contiguous");
}

void check_one(const std::vector<at::Tensor>& ts, const char* op) {
  TORCH_CHECK_VALUE(ts.size() == 1, "fooccl ", op, ": expecting one tensor per process, got ", ts.size());
  check_single(ts[0]);
}

void check_list(const std::vector<at::Tensor>& ts, const at::Tensor& like, const char* op, const char* what,
                bool same_numel) {
  for (const at::Tensor& t : ts) {
    TORCH_CHECK_VALUE(is_foo(t) && t.layout() == c10::kStrided, "fooccl ", op, ": every ", what,
                      " must be a dense foo tensor, got one on ", t.device());
    TORCH_CHECK_VALUE(t.device() == like.device(), "fooccl ", op, ": every ", what, " must be on ", like.device(),
                      ", got one on ", t.device());
    TORCH_CHECK_VALUE(!same_numel || t.numel() == like.numel(), "fooccl ", op, ": every ", what, " must have ", like.numel(),
                      " elements, as the ", is_foo(like) ? "tensor it pairs with" : "input", " does; got ",
                      t.numel());
  }
}

void check_same_device(const at::Tensor& in, const at::Tensor& out, const char* op) {
  TORCH_CHECK_VALUE(in.device() == out.device(), "fooccl ", op, ": input and output must be on the same device, got ",
                    in.device(), " and ", out.device());
}

}  // namespace foo::distributed

// fooccl's checks of a collective's tensors, made at the call. Where a
// check is NCCL's, so is its message, so that code written against NCCL
// sees the same errors.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace foo::distributed {

bool is_foo(const at::Tensor& t);
// Whether `ts` are all CPU tensors (and there is one): those go to the
// backend's host group.
bool all_cpu(const std::vector<at::Tensor>& ts);

// NCCL's checks for a tensor the collective uses in place (the messages
// are NCCL's, so that code written against it sees the same errors).
void check_single(const at::Tensor& t);

// One tensor per process, used in place.
void check_one(const std::vector<at::Tensor>& ts, const char* op);

// Every tensor of `ts` (the collective's `what`s) a dense foo tensor on
// `like`'s device, and with as many elements as `like` if `same_numel`.
void check_list(const std::vector<at::Tensor>& ts, const at::Tensor& like, const char* op, const char* what,
                bool same_numel = true);

void check_same_device(const at::Tensor& in, const at::Tensor& out, const char* op);

}  // namespace foo::distributed

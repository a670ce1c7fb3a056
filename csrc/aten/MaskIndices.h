// Index lists (index.Tensor, index_put_) made of boolean masks only: what
// CUDA's indexing turns into indices with nonzero, or into masked_fill_.
#pragma once

#include <optional>

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

namespace foo::aten {

// Whether `indices` has a defined entry and every defined one is a mask
// (bool, or uint8 as the deprecated form of one).
inline bool masks_only(const c10::List<std::optional<at::Tensor>>& indices) {
  bool any = false;
  for (const std::optional<at::Tensor>& index : indices) {
    if (!index.has_value() || !index->defined()) continue;
    if (index->scalar_type() != at::kBool && index->scalar_type() != at::kByte) return false;
    any = true;
  }
  return any;
}

}  // namespace foo::aten

// The bytes a strided tensor's elements occupy, as runs of contiguous
// memory: what the race detector declares for a tensor, so that two views
// that interleave without sharing a byte (the two column halves of a
// matrix, its even and odd rows) are not taken for one another.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/core/Tensor.h>

namespace foo::aten {

struct ByteRun {
  const char* begin;
  size_t bytes;
};

// Dense tensors (any order of dimensions, no gaps) are one run. Others are
// cut into runs along their innermost contiguous dimensions; beyond
// `max_runs` runs, or with negative strides, the whole span from the first
// to the last byte stands for them (a superset of their bytes). Empty for
// tensors without memory or without plain strides (sparse, nested,
// symbolic).
std::vector<ByteRun> byte_runs(const at::Tensor& t, size_t max_runs);

}  // namespace foo::aten

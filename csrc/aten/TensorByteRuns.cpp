#include "aten/TensorByteRuns.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace foo::aten {
namespace {

// From the lowest to the highest byte the tensor touches.
ByteRun whole_span(const at::Tensor& t, const char* base) {
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < t.dim(); ++i) {
    int64_t extent = (t.size(i) - 1) * t.stride(i);
    (extent < 0 ? lo : hi) += extent;
  }
  const int64_t item = static_cast<int64_t>(t.element_size());
  return {base + lo * item, static_cast<size_t>((hi - lo) * item + item)};
}

}  // namespace

std::vector<ByteRun> byte_runs(const at::Tensor& t, size_t max_runs) {
  if (!t.defined() || t.is_sparse() || t.is_sparse_csr() || t.is_nested() || !t.has_storage() ||
      t.unsafeGetTensorImpl()->has_symbolic_sizes_strides() || t.numel() == 0) {
    return {};
  }
  const char* base = static_cast<const char*>(t.const_data_ptr());
  if (base == nullptr) return {};
  if (t.is_non_overlapping_and_dense()) return {whole_span(t, base)};
  // The dimensions that move through memory (a broadcast dimension, of
  // stride 0, touches the same bytes again), innermost first.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (t.stride(i) < 0) return {whole_span(t, base)};
    if (t.size(i) > 1 && t.stride(i) > 0) dims.emplace_back(t.stride(i), t.size(i));
  }
  std::sort(dims.begin(), dims.end());
  // Innermost dimensions that follow each other in memory make one run.
  int64_t run = 1;
  size_t outer = 0;
  while (outer < dims.size() && dims[outer].first == run) run *= dims[outer++].second;
  size_t count = 1;
  for (size_t i = outer; i < dims.size(); ++i) {
    count *= static_cast<size_t>(dims[i].second);
    if (count > max_runs) return {whole_span(t, base)};
  }
  const int64_t item = static_cast<int64_t>(t.element_size());
  std::vector<ByteRun> runs;
  runs.reserve(count);
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (size_t i = outer; i < dims.size(); ++i) offset += index[i] * dims[i].first;
    runs.push_back({base + offset * item, static_cast<size_t>(run * item)});
    for (size_t i = outer; i < dims.size() && ++index[i] == dims[i].second; ++i) index[i] = 0;
  }
  return runs;
}

}  // namespace foo::aten

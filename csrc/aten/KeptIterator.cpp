#include "aten/KeptIterator.h"

#include <algorithm>

namespace foo::aten {

IteratorLayout::IteratorLayout(const at::TensorIteratorBase& it) {
  at::IntArrayRef s = it.shape();
  shape.assign(s.begin(), s.end());
  for (int i = 0; i < it.ntensors(); ++i) {
    at::IntArrayRef st = it.strides(i);
    strides.append(st.begin(), st.end());
    data.push_back(it.data_ptr(i));
    dtypes.push_back(it.dtype(i));
  }
}

bool IteratorLayout::operator==(const IteratorLayout& other) const {
  return shape == other.shape && strides == other.strides && data == other.data && dtypes == other.dtypes;
}

bool iterates_foo_memory(const at::TensorIteratorBase& it, const std::vector<FooOperand>& foo) {
  return std::all_of(foo.begin(), foo.end(), [&](const FooOperand& f) {
    for (int i = 0; i < it.ntensors(); ++i) {
      if (it.data_ptr(i) == f.data && it.dtype(i) == f.dtype) return true;
    }
    return false;
  });
}

}  // namespace foo::aten

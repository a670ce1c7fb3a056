#include "runtime/FooMemPool.h"

#include <c10/util/Exception.h>

#include "runtime/FooCachingAllocator.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"

namespace foo {

FooMemPool::FooMemPool(bool use_on_oom, bool no_split) : id_(graph_pool_handle()) {
  lazy_init();
  device_ = current_device();
  create_or_incref_pool(device_, id_, use_on_oom, no_split);
}

FooMemPool::~FooMemPool() {
  if (in_bad_fork()) return;  // the parent's device is out of reach
  try {
    release_pool(device_, id_);
    empty_pool(device_, id_);
  } catch (const std::exception& e) {
    TORCH_WARN("torch.foo.MemPool ", id_.first, ",", id_.second, ": returning its memory failed: ", e.what());
  }
}

int FooMemPool::use_count() const { return pool_use_count(device_, id_); }

}  // namespace foo

#include "runtime/FooAllocatorPools.h"

#include <algorithm>
#include <iterator>

#include <c10/util/Exception.h>

namespace foo::caching_allocator {

void PrivatePools::begin_routing(c10::MempoolId_t id, std::function<bool(fooStream_t)> filter, bool capture) {
  for (const PoolRouting& r : routings_) {
    TORCH_CHECK(r.id != id, "foo: memory pool (", id.first, ", ", id.second, ") of foo device ",
                static_cast<int>(device_), " is already being allocated to by ",
                r.capture ? "a graph capture" : "a use_mem_pool", " under way");
  }
  incref(id);
  routings_.push_back({id, std::move(filter), capture});
}

bool PrivatePools::end_routing(c10::MempoolId_t id) {
  auto it = std::find_if(routings_.begin(), routings_.end(), [&](const PoolRouting& r) { return r.id == id; });
  TORCH_INTERNAL_ASSERT(it != routings_.end(), "foo: nothing allocates to pool (", id.first, ", ", id.second, ")");
  bool capture = it->capture;
  routings_.erase(it);
  return capture;
}

bool PrivatePools::capture_under_way() const {
  return std::any_of(routings_.begin(), routings_.end(), [](const PoolRouting& r) { return r.capture; });
}

PrivatePool* PrivatePools::routed_pool(fooStream_t stream) const {
  for (auto r = routings_.rbegin(); r != routings_.rend(); ++r) {
    if (r->filter(stream)) return pools_.at(r->id).get();
  }
  return nullptr;
}

PrivatePool& PrivatePools::incref(c10::MempoolId_t id) {
  auto [it, created] = pools_.try_emplace(id);
  if (created) {
    it->second = std::make_unique<PrivatePool>(id);
  } else {
    ++it->second->use_count;
  }
  return *it->second;
}

bool PrivatePools::decref(c10::MempoolId_t id) {
  auto it = pools_.find(id);
  if (it == pools_.end()) return false;
  TORCH_INTERNAL_ASSERT(it->second->use_count > 0);
  if (--it->second->use_count > 0) return false;
  it->second->use_on_oom = false;
  return true;
}

int PrivatePools::use_count(c10::MempoolId_t id) const {
  auto it = pools_.find(id);
  return it == pools_.end() ? 0 : it->second->use_count;
}

std::vector<PrivatePool*> PrivatePools::use_on_oom_pools() const {
  std::vector<PrivatePool*> found;
  for (const auto& [id, pool] : pools_) {
    if (pool->use_on_oom) found.push_back(pool.get());
  }
  return found;
}

std::vector<BlockPool*> PrivatePools::unused_block_pools(std::optional<c10::MempoolId_t> only) const {
  std::vector<BlockPool*> found;
  for (const auto& [id, pool] : pools_) {
    if (pool->use_count == 0 && (!only || id == *only)) found.insert(found.end(), {&pool->small, &pool->large});
  }
  return found;
}

void PrivatePools::erase_unused(const std::function<bool(const PrivatePool&)>& holds_memory) {
  for (auto it = pools_.begin(); it != pools_.end();) {
    const PrivatePool& pool = *it->second;
    it = pool.use_count == 0 && !holds_memory(pool) ? pools_.erase(it) : std::next(it);
  }
}

}  // namespace foo::caching_allocator

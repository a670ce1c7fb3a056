#include "aten_runtime/FooHostAllocator.h"

#include <map>
#include <mutex>

#include "runtime/FooEvent.h"
#include "runtime/FooException.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace foo {
namespace {

struct FooHostAllocatorImpl final : public at::CachingHostAllocatorImpl<FooStream, FooEvent> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    lazy_init();
    if (stream_is_capturing(get_current_stream())) {
      // Growing a graph's private host pool during its capture.
      RelaxedCaptureMode relaxed;
      FOO_CHECK(fooMallocHost(ptr, size));
      return;
    }
    FOO_CHECK(fooMallocHost(ptr, size));
  }

  void free_block(at::HostBlock<FooStream>* block) override {
    // In a child forked after initialization the runtime is gone: drop it.
    if (!in_bad_fork()) FOO_CHECK(fooFreeHost(block->ptr_));
  }

  void record_stream(std::optional<std::vector<FooEvent>>& events, FooStream stream) override {
    FooEvent event;
    event.record(stream);
    events->push_back(std::move(event));
  }

  bool query_event(FooEvent& event) override { return event.query(); }

  FooStream get_current_stream() const override { return getCurrentFooStream(); }

  bool stream_is_capturing(FooStream stream) const override {
    return is_capturing(stream);
  }

 public:
  void empty_cache() override {
    at::CachingHostAllocatorImpl<FooStream, FooEvent>::empty_cache();
    // ATen's allocator drops a dead pool only once no block of it is in
    // use; with nothing in use at all, every dead pool is gone.
    if (getStats().allocated_bytes.current != 0) return;
    std::lock_guard<std::mutex> lock(pool_uses_mutex_);
    std::erase_if(pool_uses_, [](const auto& entry) { return entry.second == 0; });
  }

  // Graph capture into private pool `id`. A pool whose last graph is gone
  // stays in ATen's allocator until its cache is emptied, and taking its id
  // again before that fails an internal assertion there (a graph reset,
  // then recaptured with pool=handle): so the cache is emptied first then,
  // which is how ATen's allocator frees a pool (torch.foo.graph empties it
  // before every capture anyway, as torch.cuda.graph does).
  void begin_pool(c10::MempoolId_t id, std::function<bool(c10::Stream)> filter) {
    bool dead = false;
    {
      std::lock_guard<std::mutex> lock(pool_uses_mutex_);
      auto it = pool_uses_.find(id);
      dead = it != pool_uses_.end() && it->second == 0;
    }
    if (dead) empty_cache();
    try {
      begin_allocate_to_pool(id, std::move(filter));
    } catch (const c10::Error&) {
      // A dead pool that survived the emptying: pinned memory allocated
      // during its capture is still in use.
      TORCH_CHECK(!dead, "foo: the private memory pool (", id.first, ", ", id.second,
                  ") of a graph that is gone still holds pinned memory allocated during its capture; free those "
                  "tensors before capturing into that pool again");
      // Another capture is filling the pool: ATen counted this use before
      // it refused it.
      release_pool(id);
      throw;
    }
    std::lock_guard<std::mutex> lock(pool_uses_mutex_);
    ++pool_uses_[id];
  }

  void release_pool_use(c10::MempoolId_t id) {
    release_pool(id);
    std::lock_guard<std::mutex> lock(pool_uses_mutex_);
    --pool_uses_[id];
  }

 private:
  // How many graphs use each private pool, as ATen's allocator counts them.
  std::mutex pool_uses_mutex_;
  std::map<c10::MempoolId_t, int> pool_uses_;
};

void raw_host_delete(void* ptr);

struct FooCachingHostAllocator final : public at::CachingHostAllocatorInterface<FooHostAllocatorImpl, raw_host_delete> {
  FooHostAllocatorImpl& impl() { return *impl_; }

  at::DataPtr allocate(size_t size) override {
    // ATen's host cache rounds a request up to a power of two, which
    // overflows beyond 2^63 bytes (a negative size among them) and indexes
    // past its size classes: refused first, as CUDA's device allocator
    // refuses 1 EB.
    TORCH_CHECK_WITH(OutOfMemoryError, size < (size_t{1} << 60),
                     "Tried to allocate more than 1EB of pinned host memory (", size, " bytes requested).");
    return CachingHostAllocatorInterface::allocate(size);
  }
};

FooCachingHostAllocator g_host_allocator;

void raw_host_delete(void* ptr) { g_host_allocator.free(ptr); }

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_host_allocator)

}  // namespace

at::HostAllocator* getFooHostAllocator() { return &g_host_allocator; }

void begin_allocate_host_to_pool(c10::MempoolId_t id, std::function<bool(c10::Stream)> filter) {
  g_host_allocator.impl().begin_pool(id, std::move(filter));
}

void end_allocate_host_to_pool(c10::MempoolId_t id) { g_host_allocator.impl().end_allocate_to_pool(id); }

void release_host_pool(c10::MempoolId_t id) { g_host_allocator.impl().release_pool_use(id); }

bool is_pinned_ptr(const void* ptr) {
  fooPointerAttributes attr;
  if (fooPointerGetAttributes(&attr, ptr) != fooSuccess) {
    (void)fooGetLastError();
    return false;
  }
  return attr.type == fooMemoryTypeHost;
}

}  // namespace foo

#include "runtime/FooHostAllocator.h"

#include "runtime/FooEvent.h"
#include "runtime/FooException.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace foo {
namespace {

struct FooHostAllocatorImpl final : public at::CachingHostAllocatorImpl<FooStream, FooEvent> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    lazy_init();
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

  bool stream_is_capturing(FooStream /*stream*/) const override { return false; }
};

void raw_host_delete(void* ptr);

DECLARE_HOST_ALLOCATOR(FooCachingHostAllocator, FooHostAllocatorImpl, raw_host_delete, g_host_allocator)

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_host_allocator)

}  // namespace

at::HostAllocator* getFooHostAllocator() { return &g_host_allocator; }

bool is_pinned_ptr(const void* ptr) {
  fooPointerAttributes attr;
  if (fooPointerGetAttributes(&attr, ptr) != fooSuccess) {
    (void)fooGetLastError();
    return false;
  }
  return attr.type == fooMemoryTypeHost;
}

}  // namespace foo

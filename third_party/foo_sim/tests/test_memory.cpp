// Memory: device and pinned allocations, capacity, pointer attributes, memset.
// Runs with FOO_SIM_DEVICE_MEMORY=64MiB.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness.h"

constexpr size_t MiB = size_t{1} << 20;

TEST(malloc_and_free_account_against_capacity) {
  size_t free0, total;
  CHECK_OK(fooMemGetInfo(&free0, &total));
  CHECK(total == 64 * MiB);
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 10 * MiB));
  CHECK(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p) % 256 == 0);
  size_t free1;
  CHECK_OK(fooMemGetInfo(&free1, &total));
  CHECK(free1 == free0 - 10 * MiB);
  CHECK_OK(fooFree(p));
  CHECK_OK(fooMemGetInfo(&free1, &total));
  CHECK(free1 == free0);
}

TEST(out_of_memory_at_capacity_and_recovery) {
  void* a = nullptr;
  void* b = nullptr;
  CHECK_OK(fooMalloc(&a, 48 * MiB));
  CHECK_ERR(fooMalloc(&b, 32 * MiB), fooErrorMemoryAllocation);
  CHECK(b == nullptr);
  CHECK_DETAIL_HAS("out of memory on foo device 0");
  CHECK_DETAIL_HAS("33554432");  // the request, in bytes
  // Capacity is per device: device 1 still has all of its memory.
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooMalloc(&b, 32 * MiB));
  CHECK_OK(fooFree(b));
  CHECK_OK(fooSetDevice(0));
  CHECK_ERR(fooMalloc(&b, SIZE_MAX), fooErrorMemoryAllocation);
  CHECK_OK(fooFree(a));
  CHECK_OK(fooMalloc(&b, 64 * MiB));  // the whole device, once it is free again
  CHECK_OK(fooFree(b));
}

TEST(zero_size_and_null_are_harmless) {
  void* p = reinterpret_cast<void*>(0x1);
  CHECK_OK(fooMalloc(&p, 0));
  CHECK(p == nullptr);
  CHECK_OK(fooFree(nullptr));
  CHECK_OK(fooFreeHost(nullptr));
  CHECK_ERR(fooMalloc(nullptr, 16), fooErrorInvalidValue);
}

TEST(double_free_and_foreign_pointers_are_errors) {
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 4096));
  CHECK_ERR(fooFree(static_cast<char*>(p) + 16), fooErrorInvalidValue);  // interior
  CHECK_OK(fooFree(p));
  CHECK_ERR(fooFree(p), fooErrorInvalidValue);  // double free
  CHECK_DETAIL_HAS("already freed");
  int on_stack = 0;
  CHECK_ERR(fooFree(&on_stack), fooErrorInvalidValue);
  void* heap = std::malloc(64);
  CHECK_ERR(fooFree(heap), fooErrorInvalidValue);
  CHECK_ERR(fooFreeHost(heap), fooErrorInvalidValue);
  std::free(heap);
  void* pinned = nullptr;
  CHECK_OK(fooMallocHost(&pinned, 100));
  CHECK_ERR(fooFree(pinned), fooErrorInvalidValue);  // wrong kind of memory
  CHECK_OK(fooFreeHost(pinned));
  CHECK_ERR(fooFreeHost(pinned), fooErrorInvalidValue);
}

TEST(pointer_attributes) {
  void* dev = nullptr;
  void* host = nullptr;
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooMalloc(&dev, 1000));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooMallocHost(&host, 1000));
  fooPointerAttributes attr;
  CHECK_OK(fooPointerGetAttributes(&attr, static_cast<char*>(dev) + 999));
  CHECK(attr.type == fooMemoryTypeDevice && attr.device == 1 && attr.basePointer == dev);
  CHECK(attr.allocationSize == 1000);
  CHECK_OK(fooPointerGetAttributes(&attr, static_cast<char*>(dev) + 1000));  // one past the end
  CHECK(attr.type != fooMemoryTypeDevice || attr.basePointer != dev);
  CHECK_OK(fooPointerGetAttributes(&attr, host));
  CHECK(attr.type == fooMemoryTypeHost && attr.device == -1);
  int local = 0;
  CHECK_OK(fooPointerGetAttributes(&attr, &local));
  CHECK(attr.type == fooMemoryTypeUnregistered);
  CHECK_ERR(fooPointerGetAttributes(nullptr, dev), fooErrorInvalidValue);
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooFreeHost(host));
}

TEST(memset_sync_and_async) {
  char* p = nullptr;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&p), 1024));
  CHECK_OK(fooMemset(p, 0x5a, 1024));
  CHECK(p[0] == 0x5a && p[1023] == 0x5a);
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch_sleep(s, 100));
  CHECK_OK(fooMemsetAsync(p + 512, 0x11, 512, s));
  CHECK(p[1023] == 0x5a);  // still queued behind the sleep
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(p[511] == 0x5a && p[512] == 0x11 && p[1023] == 0x11);
  CHECK_ERR(fooMemset(p + 1000, 0, 100), fooErrorInvalidValue);  // past the end
  CHECK_DETAIL_HAS("past the end");
  std::vector<char> host(16);
  CHECK_ERR(fooMemset(host.data(), 0, 16), fooErrorInvalidValue);  // not device memory
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooFree(p));
}

TEST(free_waits_for_queued_work_on_the_block) {
  int* p = nullptr;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&p), sizeof(int)));
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch_sleep(s, 100));
  CHECK_OK(harness::launch(s, [p] { *p = 42; }));  // would be a use after free
  CHECK_OK(fooFree(p));
  CHECK(fooStreamQuery(s) == fooSuccess);
  CHECK_OK(fooStreamDestroy(s));
}

// C API: device and pinned host memory.
#include <cstring>

#include "error.h"
#include "profiler.h"
#include "race_detector.h"
#include "runtime.h"

using foo_sim::Allocation;
using foo_sim::fail;
using foo_sim::format;
using foo_sim::Runtime;

namespace {

fooError_t check_device_range(Runtime* rt, const void* ptr, size_t count, const char* what, int* device) {
  Allocation a;
  if (!rt->memory().find(ptr, &a) || a.type != fooMemoryTypeDevice) {
    return fail(fooErrorInvalidValue, format("%s: %p is not foo device memory", what, ptr));
  }
  if (!rt->memory().covers(ptr, count, fooMemoryTypeDevice, a.device)) {
    return fail(fooErrorInvalidValue,
                format("%s: %zu bytes at %p run past the end of its %zu-byte allocation", what, count, ptr, a.size));
  }
  *device = a.device;
  return fooSuccess;
}

}  // namespace

extern "C" {

fooError_t fooMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return fail(fooErrorInvalidValue, "fooMalloc: devPtr is NULL");
  *devPtr = nullptr;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  int device = rt->current_device();
  if (fooError_t e = rt->check_device(device, "fooMalloc")) return e;
  // The graph would not replay an allocation (foo_graph.h).
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooMalloc")) return e;
  return rt->memory().allocate_device(device, size, devPtr);
}

fooError_t fooFree(void* devPtr) {
  if (devPtr == nullptr) return fooSuccess;
  if (fooError_t e = Runtime::check_may_block("fooFree")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  Allocation a;
  if (!rt->memory().find(devPtr, &a) || a.type != fooMemoryTypeDevice || a.base != devPtr) {
    return fail(fooErrorInvalidValue,
                format("fooFree: pointer %p was not returned by fooMalloc or was already freed", devPtr));
  }
  if (a.imported) {
    return fail(fooErrorInvalidValue,
                format("fooFree: pointer %p is another process's memory (fooIpcOpenMemHandle): close it with "
                       "fooIpcCloseMemHandle", devPtr));
  }
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooFree")) return e;
  // Queued kernels may still use the block, so it goes only once they ran.
  if (rt->started()) rt->scheduler().wait_device_idle(a.device);
  if (foo_sim::race::on()) foo_sim::race::forget(a.base, a.size);
  return rt->memory().release(devPtr, fooMemoryTypeDevice, &a);
}

fooError_t fooMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(fooErrorInvalidValue, "fooMallocHost: ptr is NULL");
  *ptr = nullptr;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooMallocHost")) return e;
  return rt->memory().allocate_host(size, ptr);
}

fooError_t fooFreeHost(void* ptr) {
  if (ptr == nullptr) return fooSuccess;
  if (fooError_t e = Runtime::check_may_block("fooFreeHost")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  Allocation a;
  if (!rt->memory().find(ptr, &a) || a.type != fooMemoryTypeHost || a.base != ptr) {
    return fail(fooErrorInvalidValue,
                format("fooFreeHost: pointer %p was not returned by fooMallocHost or was already freed", ptr));
  }
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooFreeHost")) return e;
  // Any device may have an asynchronous copy from or to the block queued.
  if (rt->started()) {
    for (int d = 0; d < rt->config().device_count; ++d) rt->scheduler().wait_device_idle(d);
  }
  if (foo_sim::race::on()) foo_sim::race::forget(a.base, a.size);
  return rt->memory().release(ptr, fooMemoryTypeHost, &a);
}

fooError_t fooPointerGetAttributes(fooPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return fail(fooErrorInvalidValue, "fooPointerGetAttributes: attributes is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  Allocation a;
  if (ptr != nullptr && rt->memory().find(ptr, &a)) {
    *attributes = fooPointerAttributes{a.type, a.device, a.base, a.size};
  } else {
    *attributes = fooPointerAttributes{fooMemoryTypeUnregistered, -1, nullptr, 0};
  }
  return fooSuccess;
}

fooError_t fooMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return fail(fooErrorInvalidValue, "fooMemGetInfo: free or total is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  int device = rt->current_device();
  if (fooError_t e = rt->check_device(device, "fooMemGetInfo")) return e;
  *total = rt->memory().capacity();
  *free = *total - rt->memory().used(device);
  return fooSuccess;
}

fooError_t fooMemset(void* devPtr, int value, size_t count) {
  if (count == 0) return fooSuccess;
  if (fooError_t e = Runtime::check_may_block("fooMemset")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  int device;
  if (fooError_t e = check_device_range(rt, devPtr, count, "fooMemset", &device)) return e;
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooMemset")) return e;
  foo_sim::profiler::ScopedLabel label(fooActivityKindMemset, "Memset", count);
  if (foo_sim::race::on()) foo_sim::race::declare_own(devPtr, count, true, "Memset");
  return rt->scheduler().launch_and_wait(rt->scheduler().default_stream(device),
                                         [=] { std::memset(devPtr, value, count); });
}

fooError_t fooMemsetAsync(void* devPtr, int value, size_t count, fooStream_t stream) {
  if (count == 0) return fooSuccess;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  int device;
  if (fooError_t e = check_device_range(rt, devPtr, count, "fooMemsetAsync", &device)) return e;
  foo_sim::profiler::ScopedLabel label(fooActivityKindMemset, "Memset", count);
  if (foo_sim::race::on()) foo_sim::race::declare_own(devPtr, count, true, "Memset");
  return rt->scheduler().launch(rt->resolve(stream), [=] { std::memset(devPtr, value, count); });
}

}  // extern "C"

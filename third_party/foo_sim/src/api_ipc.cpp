// C API: interprocess memory and event handles (foo_ipc.h).
#include <map>
#include <mutex>
#include <tuple>

#include "error.h"
#include "ipc_event.h"
#include "ipc_segment.h"
#include "race_detector.h"
#include "runtime.h"

using foo_sim::Allocation;
using foo_sim::fail;
using foo_sim::format;
using foo_sim::Runtime;
namespace ipc = foo_sim::ipc;

namespace {

// Other processes' allocations mapped here, one mapping per allocation
// however often it is opened (foo_ipc.h).
struct Opened {
  void* base;
  size_t size;
  int fd;
  int count;
};
using OpenedKey = std::tuple<int32_t, uint64_t, uint64_t>;  // pid, token, serial
std::mutex g_mutex;
std::map<OpenedKey, Opened> g_opened;

}  // namespace

extern "C" {

fooError_t fooIpcGetMemHandle(fooIpcMemHandle_t* handle, void* devPtr) {
  if (handle == nullptr) return fail(fooErrorInvalidValue, "fooIpcGetMemHandle: handle is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  Allocation a;
  if (devPtr == nullptr || !rt->memory().find(devPtr, &a) || a.type != fooMemoryTypeDevice) {
    return fail(fooErrorInvalidValue, format("fooIpcGetMemHandle: %p is not foo device memory", devPtr));
  }
  if (a.imported) {
    return fail(fooErrorInvalidValue,
                format("fooIpcGetMemHandle: %p is another process's memory (fooIpcOpenMemHandle)", devPtr));
  }
  if (a.base != devPtr) {
    return fail(fooErrorInvalidValue,
                format("fooIpcGetMemHandle: %p is inside the allocation at %p, not its start", devPtr, a.base));
  }
  if (a.shared.fd < 0) {
    return fail(fooErrorInvalidValue,
                format("fooIpcGetMemHandle: the allocation at %p is private: the process had no file descriptor "
                       "left when it was made", devPtr));
  }
  rt->memory().mark_exported(devPtr);
  ipc::encode(a.shared, ipc::HandleKind::Memory, a.size, handle->reserved);
  return fooSuccess;
}

fooError_t fooIpcOpenMemHandle(void** devPtr, fooIpcMemHandle_t handle, unsigned int flags) {
  if (devPtr == nullptr) return fail(fooErrorInvalidValue, "fooIpcOpenMemHandle: devPtr is NULL");
  *devPtr = nullptr;
  if (flags != fooIpcMemLazyEnablePeerAccess) {
    return fail(fooErrorInvalidValue,
                format("fooIpcOpenMemHandle: flags must be fooIpcMemLazyEnablePeerAccess, got 0x%x", flags));
  }
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  int device = rt->current_device();
  if (fooError_t e = rt->check_device(device, "fooIpcOpenMemHandle")) return e;
  ipc::WireHandle h;
  void* base = nullptr;
  int fd = -1;
  if (fooError_t e = ipc::open_handle(handle.reserved, ipc::HandleKind::Memory, "fooIpcOpenMemHandle", &h, &base, &fd)) {
    return e;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  OpenedKey key{h.name.pid, h.name.token, h.name.serial};
  auto it = g_opened.find(key);
  if (it != g_opened.end()) {
    ipc::destroy_segment(base, h.size, fd);  // already mapped: one mapping serves every open
    ++it->second.count;
    *devPtr = it->second.base;
    return fooSuccess;
  }
  g_opened[key] = Opened{base, h.size, fd, 1};
  Allocation a{base, h.size, fooMemoryTypeDevice, device, h.name, /*imported=*/true, /*exported=*/false};
  a.shared.fd = fd;
  rt->memory().add_imported(a);
  *devPtr = base;
  return fooSuccess;
}

fooError_t fooIpcCloseMemHandle(void* devPtr) {
  if (fooError_t e = Runtime::check_may_block("fooIpcCloseMemHandle")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  Allocation a;
  if (devPtr == nullptr || !rt->memory().find(devPtr, &a) || !a.imported || a.base != devPtr) {
    return fail(fooErrorInvalidValue,
                format("fooIpcCloseMemHandle: %p was not returned by fooIpcOpenMemHandle or was already closed", devPtr));
  }
  std::unique_lock<std::mutex> lock(g_mutex);
  OpenedKey key{a.shared.pid, a.shared.token, a.shared.serial};
  auto it = g_opened.find(key);
  if (it == g_opened.end()) {
    return fail(fooErrorInvalidValue, format("fooIpcCloseMemHandle: %p was already closed", devPtr));
  }
  if (--it->second.count > 0) return fooSuccess;
  Opened opened = it->second;
  g_opened.erase(it);
  rt->memory().forget_imported(devPtr, &a);
  lock.unlock();
  // Queued kernels may still use the mapping.
  if (rt->started()) rt->scheduler().wait_device_idle(a.device);
  if (foo_sim::race::on()) foo_sim::race::forget(a.base, a.size);
  ipc::destroy_segment(opened.base, opened.size, opened.fd);
  return fooSuccess;
}

fooError_t fooIpcGetEventHandle(fooIpcEventHandle_t* handle, fooEvent_t event) {
  if (handle == nullptr) return fail(fooErrorInvalidValue, "fooIpcGetEventHandle: handle is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return ipc::shared_event_handle(event, handle);
}

fooError_t fooIpcOpenEventHandle(fooEvent_t* event, fooIpcEventHandle_t handle) {
  if (event == nullptr) return fail(fooErrorInvalidValue, "fooIpcOpenEventHandle: event is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return ipc::open_shared_event(rt, handle, event);
}

}  // extern "C"

// C API: streams and launches.
#include <memory>
#include <string>

#include "error.h"
#include "ipc_event.h"
#include "runtime.h"

using foo_sim::fail;
using foo_sim::Runtime;

extern "C" {

fooError_t fooStreamCreate(fooStream_t* stream) { return fooStreamCreateWithPriority(stream, fooStreamDefault, 0); }

fooError_t fooStreamCreateWithFlags(fooStream_t* stream, unsigned int flags) {
  return fooStreamCreateWithPriority(stream, flags, 0);
}

fooError_t fooStreamCreateWithPriority(fooStream_t* stream, unsigned int flags, int priority) {
  if (stream == nullptr) return fail(fooErrorInvalidValue, "fooStreamCreate: stream is NULL");
  if (flags != fooStreamDefault) {
    return fail(fooErrorInvalidValue,
                foo_sim::format("fooStreamCreate: flags must be fooStreamDefault (0), got 0x%x", flags));
  }
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().create_stream(rt->current_device(), priority, stream);
}

fooError_t fooStreamDestroy(fooStream_t stream) {
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (stream == nullptr) return fail(fooErrorInvalidResourceHandle, "fooStreamDestroy: the default stream cannot be destroyed");
  return rt->scheduler().destroy_stream(stream);
}

fooError_t fooStreamQuery(fooStream_t stream) {
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().query_stream(rt->resolve(stream));
}

fooError_t fooStreamSynchronize(fooStream_t stream) {
  if (fooError_t e = Runtime::check_may_block("fooStreamSynchronize")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().synchronize_stream(rt->resolve(stream));
}

fooError_t fooStreamWaitEvent(fooStream_t stream, fooEvent_t event, unsigned int flags) {
  if (flags != 0) return fail(fooErrorInvalidValue, foo_sim::format("fooStreamWaitEvent: flags must be 0, got 0x%x", flags));
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (auto shared = foo_sim::ipc::shared_event(event)) {
    return foo_sim::ipc::stream_wait(rt, shared, event, rt->resolve(stream));
  }
  return rt->scheduler().wait_event(rt->resolve(stream), event);
}

fooError_t fooStreamGetPriority(fooStream_t stream, int* priority) {
  if (priority == nullptr) return fail(fooErrorInvalidValue, "fooStreamGetPriority: priority is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().stream_info(rt->resolve(stream), nullptr, priority, nullptr);
}

fooError_t fooStreamGetFlags(fooStream_t stream, unsigned int* flags) {
  if (flags == nullptr) return fail(fooErrorInvalidValue, "fooStreamGetFlags: flags is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().stream_info(rt->resolve(stream), nullptr, nullptr, flags);
}

fooError_t fooStreamGetDevice(fooStream_t stream, int* device) {
  if (device == nullptr) return fail(fooErrorInvalidValue, "fooStreamGetDevice: device is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().stream_info(rt->resolve(stream), device, nullptr, nullptr);
}

namespace {

fooError_t launch_host_func(fooStream_t stream, fooHostFn_t fn, void* userData, bool serial) {
  if (fn == nullptr) return fail(fooErrorInvalidValue, "fooLaunchHostFunc: fn is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (rt->config().launch_blocking) {
    if (fooError_t e = Runtime::check_may_block("fooLaunchHostFunc with FOO_SIM_LAUNCH_BLOCKING=1")) return e;
  }
  return rt->scheduler().launch(rt->resolve(stream), fn, userData, serial);
}

}  // namespace

fooError_t fooLaunchKernel(fooStream_t stream, fooHostFn_t fn, void* userData, const char* name) {
  return fooLaunchKernelEx(stream, fn, userData, name, fooKernelDefault);
}

fooError_t fooLaunchKernelEx(fooStream_t stream, fooHostFn_t fn, void* userData, const char* name,
                             unsigned int flags) {
  if ((flags & ~fooKernelSerial) != 0) return fail(fooErrorInvalidValue, "fooLaunchKernelEx: unknown flags");
  foo_sim::profiler::ScopedLabel label(fooActivityKindKernel, name);
  return launch_host_func(stream, fn, userData, (flags & fooKernelSerial) != 0);
}

fooError_t fooLaunchHostFunc(fooStream_t stream, fooHostFn_t fn, void* userData) {
  return launch_host_func(stream, fn, userData, false);
}

fooError_t fooLaunchHostFuncOwned(fooStream_t stream, fooHostFn_t fn, void* userData, fooHostFn_t release,
                                  const char* name) {
  return fooLaunchHostFuncOwnedWithPrefetch(stream, fn, userData, release, nullptr, name);
}

fooError_t fooLaunchHostFuncOwnedWithPrefetch(fooStream_t stream, fooHostFn_t fn, void* userData,
                                              fooHostFn_t release, fooHostFnPrefetch_t prefetch, const char* name) {
  // Whatever happens below, userData is ours from here on: the holder
  // releases it when the last copy of the work goes (see foo_runtime.h).
  std::shared_ptr<void> owned(userData, [release](void* p) {
    if (release) release(p);
  });
  const char* api = prefetch ? "fooLaunchHostFuncOwnedWithPrefetch" : "fooLaunchHostFuncOwned";
  if (fn == nullptr) return fail(fooErrorInvalidValue, std::string(api) + ": fn is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (rt->config().launch_blocking) {
    std::string what = std::string(api) + " with FOO_SIM_LAUNCH_BLOCKING=1";
    if (fooError_t e = Runtime::check_may_block(what.c_str())) return e;
  }
  foo_sim::profiler::ScopedLabel label(fooActivityKindKernel, name ? name : api);
  return rt->scheduler().launch_owned(rt->resolve(stream), fn, std::move(owned), prefetch);
}

fooError_t fooKernelReportError(const char* message) { return foo_sim::Scheduler::report_kernel_error(message); }

}  // extern "C"

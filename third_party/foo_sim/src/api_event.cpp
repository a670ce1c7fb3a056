// C API: events.
#include "error.h"
#include "ipc_event.h"
#include "runtime.h"

using foo_sim::fail;
using foo_sim::Runtime;

extern "C" {

fooError_t fooEventCreate(fooEvent_t* event) { return fooEventCreateWithFlags(event, fooEventDefault); }

fooError_t fooEventCreateWithFlags(fooEvent_t* event, unsigned int flags) {
  if (event == nullptr) return fail(fooErrorInvalidValue, "fooEventCreate: event is NULL");
  if (flags & ~(fooEventBlockingSync | fooEventDisableTiming | fooEventIgnoreFailures | fooEventInterprocess)) {
    return fail(fooErrorInvalidValue, foo_sim::format("fooEventCreate: unknown flags 0x%x", flags));
  }
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (flags & fooEventInterprocess) return foo_sim::ipc::create_shared_event(rt, flags, event);
  return rt->scheduler().create_event(rt->current_device(), flags, event);
}

fooError_t fooEventRecord(fooEvent_t event, fooStream_t stream) {
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (auto shared = foo_sim::ipc::shared_event(event)) return foo_sim::ipc::record(rt, shared, event, rt->resolve(stream));
  return rt->scheduler().record_event(event, rt->resolve(stream));
}

fooError_t fooEventQuery(fooEvent_t event) {
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (auto shared = foo_sim::ipc::shared_event(event)) return foo_sim::ipc::query(shared);
  return rt->scheduler().query_event(event);
}

fooError_t fooEventSynchronize(fooEvent_t event) {
  if (fooError_t e = Runtime::check_may_block("fooEventSynchronize")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (auto shared = foo_sim::ipc::shared_event(event)) return foo_sim::ipc::synchronize(shared);
  return rt->scheduler().synchronize_event(event);
}

fooError_t fooEventElapsedTime(float* ms, fooEvent_t start, fooEvent_t end) {
  if (ms == nullptr) return fail(fooErrorInvalidValue, "fooEventElapsedTime: ms is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().elapsed_time(ms, start, end);
}

fooError_t fooEventDestroy(fooEvent_t event) {
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  // Forgotten first: once destroyed, the handle may be reused by a new event.
  foo_sim::ipc::destroy_shared_event(event);
  return rt->scheduler().destroy_event(event);
}

fooError_t fooEventGetDevice(fooEvent_t event, int* device) {
  if (device == nullptr) return fail(fooErrorInvalidValue, "fooEventGetDevice: device is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().event_device(event, device);
}

}  // extern "C"

// C API: devices.
#include <cstdio>
#include <cstring>

#include "error.h"
#include "priority.h"
#include "runtime.h"

using foo_sim::fail;
using foo_sim::Runtime;

extern "C" {

fooError_t fooGetDeviceCount(int* count) {
  if (count == nullptr) return fail(fooErrorInvalidValue, "fooGetDeviceCount: count is NULL");
  *count = 0;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  *count = rt->config().device_count;
  if (*count == 0) return fail(fooErrorNoDevice, "no foo device: FOO_SIM_DEVICE_COUNT is 0");
  return fooSuccess;
}

fooError_t fooSetDevice(int device) {
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  return rt->set_current_device(device);
}

fooError_t fooGetDevice(int* device) {
  if (device == nullptr) return fail(fooErrorInvalidValue, "fooGetDevice: device is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  if (fooError_t e = rt->check_device(0, "fooGetDevice")) return e;
  *device = rt->current_device();
  return fooSuccess;
}

fooError_t fooGetDeviceProperties(fooDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(fooErrorInvalidValue, "fooGetDeviceProperties: prop is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  if (fooError_t e = rt->check_device(device, "fooGetDeviceProperties")) return e;
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "foo_sim simulated device %d", device);
  prop->totalGlobalMem = rt->config().device_memory;
  prop->major = 1;
  prop->minor = 0;
  prop->executorCount = rt->config().executors_per_device;
  prop->leastStreamPriority = foo_sim::kLeastStreamPriority;
  prop->greatestStreamPriority = foo_sim::kGreatestStreamPriority;
  return fooSuccess;
}

fooError_t fooDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  if (leastPriority) *leastPriority = foo_sim::kLeastStreamPriority;
  if (greatestPriority) *greatestPriority = foo_sim::kGreatestStreamPriority;
  return fooSuccess;
}

fooError_t fooInit(void) {
  Runtime* rt;
  return Runtime::get_started(&rt);
}

fooError_t fooDeviceGetDefaultStream(int device, fooStream_t* stream) {
  if (stream == nullptr) return fail(fooErrorInvalidValue, "fooDeviceGetDefaultStream: stream is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (fooError_t e = rt->check_device(device, "fooDeviceGetDefaultStream")) return e;
  *stream = rt->scheduler().default_stream(device);
  return fooSuccess;
}

fooError_t fooDeviceSynchronize(void) {
  if (fooError_t e = Runtime::check_may_block("fooDeviceSynchronize")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().synchronize_device(rt->current_device());
}

int fooRuntimeIsStarted(void) {
  Runtime* rt;
  if (Runtime::get(&rt) != fooSuccess) return 0;
  return rt->started() ? 1 : 0;
}

}  // extern "C"

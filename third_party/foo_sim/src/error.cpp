#include "error.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

namespace foo_sim {
namespace {

thread_local LastError t_last;

}  // namespace

fooError_t fail(fooError_t code, std::string detail) {
  LastError& last = t_last;
  last.code = code;
  last.detail = std::move(detail);
  return code;
}

LastError exchange_last_error(LastError next) { return std::exchange(t_last, std::move(next)); }

bool has_last_error() {
  const LastError& last = t_last;
  return last.code != fooSuccess || !last.detail.empty();
}

std::string format(const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return buffer;
}

}  // namespace foo_sim

extern "C" {

const char* fooGetErrorName(fooError_t error) {
  switch (error) {
    case fooSuccess: return "fooSuccess";
    case fooErrorInvalidValue: return "fooErrorInvalidValue";
    case fooErrorMemoryAllocation: return "fooErrorMemoryAllocation";
    case fooErrorInitializationError: return "fooErrorInitializationError";
    case fooErrorInvalidMemcpyDirection: return "fooErrorInvalidMemcpyDirection";
    case fooErrorNoDevice: return "fooErrorNoDevice";
    case fooErrorInvalidDevice: return "fooErrorInvalidDevice";
    case fooErrorDeviceUninitialized: return "fooErrorDeviceUninitialized";
    case fooErrorInvalidResourceHandle: return "fooErrorInvalidResourceHandle";
    case fooErrorNotReady: return "fooErrorNotReady";
    case fooErrorLaunchFailure: return "fooErrorLaunchFailure";
    case fooErrorNotPermitted: return "fooErrorNotPermitted";
    case fooErrorIllegalState: return "fooErrorIllegalState";
    case fooErrorStreamCaptureUnsupported: return "fooErrorStreamCaptureUnsupported";
    case fooErrorStreamCaptureInvalidated: return "fooErrorStreamCaptureInvalidated";
    case fooErrorStreamCaptureUnmatched: return "fooErrorStreamCaptureUnmatched";
    case fooErrorStreamCaptureUnjoined: return "fooErrorStreamCaptureUnjoined";
    case fooErrorStreamCaptureIsolation: return "fooErrorStreamCaptureIsolation";
    case fooErrorStreamCaptureWrongThread: return "fooErrorStreamCaptureWrongThread";
    case fooErrorRaceDetected: return "fooErrorRaceDetected";
  }
  return "fooErrorUnknown";
}

const char* fooGetErrorString(fooError_t error) {
  switch (error) {
    case fooSuccess: return "no error";
    case fooErrorInvalidValue: return "invalid argument";
    case fooErrorMemoryAllocation: return "out of memory";
    case fooErrorInitializationError: return "initialization error";
    case fooErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case fooErrorNoDevice: return "no foo device is detected";
    case fooErrorInvalidDevice: return "invalid device ordinal";
    case fooErrorDeviceUninitialized: return "invalid device context";
    case fooErrorInvalidResourceHandle: return "invalid resource handle";
    case fooErrorNotReady: return "device not ready";
    case fooErrorLaunchFailure: return "a launched kernel failed";
    case fooErrorNotPermitted: return "operation not permitted";
    case fooErrorIllegalState: return "the resource is in a state that does not allow this";
    case fooErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case fooErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case fooErrorStreamCaptureUnmatched: return "the capture was not begun on this stream";
    case fooErrorStreamCaptureUnjoined: return "capture was not joined back: a forked stream's work is not awaited by the capturing stream";
    case fooErrorStreamCaptureIsolation: return "dependency across the boundary of a stream capture";
    case fooErrorStreamCaptureWrongThread: return "attempt to end a capture begun by another thread";
    case fooErrorRaceDetected: return "the race detector found unsynchronized accesses";
  }
  return "unrecognized error code";
}

fooError_t fooGetLastError(void) { return std::exchange(foo_sim::t_last.code, fooSuccess); }

fooError_t fooPeekAtLastError(void) { return foo_sim::t_last.code; }

const char* fooGetErrorDetail(void) { return foo_sim::t_last.detail.c_str(); }

}  // extern "C"

// What the rest of the runtime needs to know about stream capture (the
// torch side of foo_sim's foo_graph.h), in the manner of
// c10/cuda/CUDAGraphsC10Utils.h.
#pragma once

#include <atomic>

#include <foo_sim/foo_graph.h>

#include "runtime/FooStream.h"

namespace foo {

// Captures begun by torch_foo and not yet ended, across threads. Zero is
// the common case, and then nothing on the launch path needs to ask
// foo_sim whether a stream is capturing.
int captures_underway();
// Kept by FooGraphImpl around fooStreamBeginCapture/fooStreamEndCapture.
void note_capture_begun();
void note_capture_ended();

// foo_sim's status of `stream` (fooStreamCaptureStatusNone when not capturing).
fooStreamCaptureStatus capture_status(const FooStream& stream);
// The id of the capture `stream` takes part in, 0 when none.
unsigned long long capture_id(const FooStream& stream);
// Whether `stream` takes part in a capture; no foo_sim call when none is under way.
bool is_capturing(const FooStream& stream);

// Raises a RuntimeError naming `what` if the current stream of the current
// device is capturing, as CUDA's assertNotCapturing does, for operations
// whose meaning cannot be captured.
void assert_not_capturing(const char* what);

// While alive, the calling thread may make foo_sim's "potentially unsafe"
// calls (fooMalloc, fooMallocHost) during a capture: a caching allocator
// growing a graph's private pool needs that, as CUDA's does.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode();
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  fooStreamCaptureMode previous_;
};

}  // namespace foo

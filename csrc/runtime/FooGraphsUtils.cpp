#include "runtime/FooGraphsUtils.h"

#include <c10/util/Exception.h>

#include "runtime/FooException.h"

namespace foo {
namespace {
std::atomic<int> g_captures{0};
}  // namespace

int captures_underway() { return g_captures.load(std::memory_order_acquire); }
void note_capture_begun() { g_captures.fetch_add(1, std::memory_order_acq_rel); }
void note_capture_ended() { g_captures.fetch_sub(1, std::memory_order_acq_rel); }

fooStreamCaptureStatus capture_status(const FooStream& stream) {
  fooStreamCaptureStatus status = fooStreamCaptureStatusNone;
  FOO_CHECK(fooStreamIsCapturing(stream.stream(), &status));
  return status;
}

unsigned long long capture_id(const FooStream& stream) {
  fooStreamCaptureStatus status = fooStreamCaptureStatusNone;
  unsigned long long id = 0;
  FOO_CHECK(fooStreamGetCaptureInfo(stream.stream(), &status, &id));
  return status == fooStreamCaptureStatusNone ? 0 : id;
}

bool is_capturing(const FooStream& stream) {
  return captures_underway() != 0 && capture_status(stream) != fooStreamCaptureStatusNone;
}

void assert_not_capturing(const char* what) {
  TORCH_CHECK(!is_capturing(getCurrentFooStream()), what,
              " is not allowed while the current foo stream is capturing a graph");
}

RelaxedCaptureMode::RelaxedCaptureMode() : previous_(fooStreamCaptureModeRelaxed) {
  FOO_CHECK(fooThreadExchangeStreamCaptureMode(&previous_));
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  fooStreamCaptureMode mode = previous_;
  (void)fooThreadExchangeStreamCaptureMode(&mode);
}

}  // namespace foo

// DDP's timer for foo parameters (c10d::Timer, reducer_timer.hpp): the
// reducer records its forward, backward and communication milestones, and
// the logger (ddp_logging_data's avg_*_time) asks for the time between two
// of them. As CUDA's timer, each milestone is also an event on the current
// stream of the parameters' device, so the times measured are the device's:
// when the queued work ran, not when the host queued it.
#include <optional>

#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include "runtime/FooStream.h"

namespace foo::distributed {
namespace {

constexpr double kNanosPerMilli = 1e6;

class FooTimer final : public c10d::Timer {
 public:
  explicit FooTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    Timer::record(event);  // the host's timestamp, which the logger reads too
    c10::DeviceGuard guard(device_);
    slot(event).record(getCurrentFooStream(device_.index()));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    c10::Event& first = slot(start);
    c10::Event& second = slot(end);
    // A milestone the iteration never reached (no backward, no_sync): no time.
    if (!first.was_marked_for_recording() || !second.was_marked_for_recording()) return std::nullopt;
    c10::DeviceGuard guard(device_);
    // The logger asks at the start of a later forward, when the work timed
    // is mostly done: the waits are short.
    first.synchronize();
    second.synchronize();
    double ms = first.elapsedTime(second);
    // A start recorded after its end (communication that began in one
    // iteration and is measured against another's): no valid time.
    if (ms < 0) return std::nullopt;
    return static_cast<int64_t>(ms * kNanosPerMilli);
  }

 private:
  c10::Event& slot(Event event) {
    switch (event) {
      case Event::kForwardStart: return forward_start_;
      case Event::kBackwardComputeStart: return backward_compute_start_;
      case Event::kBackwardComputeEnd: return backward_compute_end_;
      case Event::kBackwardCommStart: return backward_comm_start_;
      case Event::kBackwardCommEnd: return backward_comm_end_;
    }
    TORCH_INTERNAL_ASSERT(false, "unknown DDP timer event");
  }

  static c10::Event timed() { return c10::Event(c10::kPrivateUse1, c10::EventFlag::BACKEND_DEFAULT); }

  const c10::Device device_;
  c10::Event forward_start_ = timed();
  c10::Event backward_compute_start_ = timed();
  c10::Event backward_compute_end_ = timed();
  c10::Event backward_comm_start_ = timed();
  c10::Event backward_comm_end_ = timed();
};

}  // namespace
}  // namespace foo::distributed

namespace c10d {
// The macro names the registry unqualified.
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, foo::distributed::FooTimer)
}  // namespace c10d

// The legacy profiler's PrivateUse1 hooks, for
// torch.autograd.profiler.profile(use_device="foo") without Kineto
// (use_kineto=False, torch's KINETO_PRIVATEUSE1_FALLBACK state): each
// operator records a timing event on the current foo stream when it starts
// and when it ends, and its device time is the time between the two, as
// CUDA's legacy fallback does. torch.profiler.profile and use_kineto=True
// use the Kineto plugin instead (FooKinetoProfiler.cpp).
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>

#include <foo_sim/foo_runtime.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooStream.h"

namespace foo::profiler {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

class FooProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    c10::DeviceIndex index = current_device();
    if (device != nullptr) *device = index;
    fooEvent_t raw = nullptr;
    // Failures stay with the stream's next synchronization: the profiler
    // waiting on its events must not consume them.
    FOO_CHECK(on_device(index, [&] { return fooEventCreateWithFlags(&raw, fooEventIgnoreFailures); }));
    *event = std::shared_ptr<void>(raw, [](void* e) { (void)fooEventDestroy(static_cast<fooEvent_t>(e)); });
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    FOO_CHECK(fooEventRecord(raw, getCurrentFooStream(index).stream()));
  }

  // Microseconds, as the legacy profiler expects.
  float elapsed(const ProfilerVoidEventStub* first, const ProfilerVoidEventStub* second) const override {
    auto* a = static_cast<fooEvent_t>(first->get());
    auto* b = static_cast<fooEvent_t>(second->get());
    FOO_CHECK(fooEventSynchronize(a));
    FOO_CHECK(fooEventSynchronize(b));
    float ms = 0;
    FOO_CHECK(fooEventElapsedTime(&ms, a, b));
    return ms * 1000.0f;
  }

  // foo has no marker or range API of its own (NVTX's role): nothing to do.
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      c10::DeviceIndex previous = exchange_device(d);
      op(d);
      exchange_device(previous);
    }
  }

  void synchronize() const override { device_synchronize(current_device()); }
};

struct RegisterStubs {
  RegisterStubs() {
    static FooProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} register_stubs;

}  // namespace
}  // namespace foo::profiler

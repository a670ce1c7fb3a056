// Activity tracing (foo_sim/foo_profiler.h): what is recorded while tracing
// is on, and only then; times taken when the work really ran.
#include <atomic>
#include <cstring>
#include <vector>

#include "foo_sim/foo_profiler.h"
#include "harness.h"

namespace {

std::vector<fooActivity> flush() {
  std::vector<fooActivity> out;
  CHECK_OK(fooProfilerFlush([](const fooActivity* a, void* v) { static_cast<std::vector<fooActivity>*>(v)->push_back(*a); },
                            &out));
  return out;
}

void nothing(void*) {}

}  // namespace

TEST(nothing_is_recorded_while_off) {
  CHECK(!fooProfilerIsActive());
  CHECK_OK(fooLaunchKernel(nullptr, &nothing, nullptr, "before"));
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooProfilerStart());
  CHECK(fooProfilerIsActive());
  CHECK_OK(fooProfilerStop());
  CHECK(!fooProfilerIsActive());
  CHECK(flush().empty());
}

TEST(kernels_copies_and_memsets_with_their_times_streams_and_correlation) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  void* dev = nullptr;
  CHECK_OK(fooMalloc(&dev, 4096));
  std::vector<char> host(4096, 1);
  CHECK_OK(fooProfilerStart());
  fooProfilerSetCorrelationId(42);
  CHECK_OK(fooLaunchKernel(s, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }, nullptr,
                           "sleepy"));
  fooProfilerSetCorrelationId(0);
  CHECK_OK(fooMemcpyAsync(dev, host.data(), host.size(), fooMemcpyHostToDevice, s));
  CHECK_OK(fooMemsetAsync(dev, 0, 4096, nullptr));
  CHECK_OK(fooProfilerStop());  // waits for the work: no synchronization needed
  std::vector<fooActivity> got = flush();
  CHECK(got.size() == 3);
  const fooActivity& k = got[0];
  CHECK(k.kind == fooActivityKindKernel && std::strcmp(k.name, "sleepy") == 0);
  CHECK(k.stream == s && k.device == 0 && k.correlationId == 42);
  CHECK(k.launchNs <= k.startNs && k.startNs < k.endNs);
  CHECK(k.endNs - k.startNs >= 30'000'000);
  const fooActivity& c = got[1];
  CHECK(c.kind == fooActivityKindMemcpy && std::strcmp(c.name, "Memcpy HtoD") == 0);
  CHECK(c.bytes == 4096 && c.memcpyKind == fooMemcpyHostToDevice && c.correlationId == 0);
  CHECK(c.startNs >= k.endNs);  // stream order
  fooStream_t default_stream;
  CHECK_OK(fooDeviceGetDefaultStream(0, &default_stream));
  const fooActivity& m = got[2];
  CHECK(m.kind == fooActivityKindMemset && m.stream == default_stream && m.bytes == 4096);
  CHECK(flush().empty());  // flushed activities are forgotten
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(stop_leaves_kernel_errors_to_the_next_synchronization) {
  CHECK_OK(fooProfilerStart());
  CHECK_OK(fooLaunchKernel(nullptr, [](void*) { fooKernelReportError("boom"); }, nullptr, "failing"));
  CHECK_OK(fooProfilerStop());
  CHECK(flush().size() == 1);
  CHECK_ERR(fooDeviceSynchronize(), fooErrorLaunchFailure);
  CHECK_OK(fooDeviceSynchronize());
}

TEST(start_forgets_an_earlier_session) {
  CHECK_OK(fooProfilerStart());
  CHECK_OK(fooLaunchKernel(nullptr, &nothing, nullptr, "first"));
  CHECK_OK(fooProfilerStop());
  CHECK_OK(fooProfilerStart());
  CHECK_OK(fooLaunchKernel(nullptr, &nothing, nullptr, "second"));
  CHECK_OK(fooProfilerStop());
  std::vector<fooActivity> got = flush();
  CHECK(got.size() == 1 && std::strcmp(got[0].name, "second") == 0);
}

// Errors: names and strings, the last error, asynchronous kernel failures.
#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness.h"

namespace {

// Holds kernels back until the test opens it, so "not complete yet" needs no
// timing. It opens itself when the case ends, even by a failed CHECK, so no
// executor stays blocked for the cases after it.
class Gate {
 public:
  ~Gate() { open(); }
  void open() { *open_ = true; }
  // A kernel that waits for the gate, then fails with `message`.
  fooError_t launch_failure(fooStream_t stream, std::string message) {
    return harness::launch(stream, [open = open_, message] {
      while (!*open) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      fooKernelReportError(message.c_str());
    });
  }

 private:
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(false);
};

// A kernel that fails late enough for the host to be waiting by then.
fooError_t launch_slow_failure(fooStream_t stream, const char* message) {
  return harness::launch(stream, [message] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fooKernelReportError(message);
  });
}

}  // namespace

TEST(names_and_descriptions) {
  CHECK(std::strcmp(fooGetErrorName(fooSuccess), "fooSuccess") == 0);
  CHECK(std::strcmp(fooGetErrorName(fooErrorMemoryAllocation), "fooErrorMemoryAllocation") == 0);
  CHECK(std::strcmp(fooGetErrorString(fooErrorMemoryAllocation), "out of memory") == 0);
  CHECK(std::strcmp(fooGetErrorName(static_cast<fooError_t>(12345)), "fooErrorUnknown") == 0);
  CHECK(std::strlen(fooGetErrorString(fooErrorLaunchFailure)) > 0);
}

TEST(last_error_is_kept_per_thread_until_read) {
  fooGetLastError();
  CHECK_ERR(fooSetDevice(99), fooErrorInvalidDevice);
  CHECK(fooPeekAtLastError() == fooErrorInvalidDevice);
  CHECK_OK(fooSetDevice(0));  // success does not clear it, as in CUDA
  CHECK(fooGetLastError() == fooErrorInvalidDevice);
  CHECK(fooGetLastError() == fooSuccess);
  fooError_t other = fooErrorNotReady;
  std::thread([&] { other = fooPeekAtLastError(); }).join();
  CHECK(other == fooSuccess);
}

TEST(kernel_failure_surfaces_at_the_next_query_and_the_stream_stays_usable) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch(s, [] { fooKernelReportError("index 12 is out of bounds for size 4"); }));
  std::atomic<bool> later_ran{false};
  CHECK_OK(harness::launch(s, [&] { later_ran = true; }));
  fooError_t first;
  do {
    first = fooStreamQuery(s);
  } while (first == fooErrorNotReady);
  CHECK(first == fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("index 12 is out of bounds");
  CHECK_OK(fooStreamSynchronize(s));  // reported once, then cleared...
  CHECK(later_ran);                   // and the work after it still ran
  CHECK_OK(harness::launch(s, [] { fooKernelReportError("second failure"); }));
  CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);  // ...by query or sync
  CHECK_DETAIL_HAS("second failure");
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(first_query_after_a_failure_reports_it) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch(s, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fooKernelReportError("kernel said no");
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_ERR(fooStreamQuery(s), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("kernel said no");
  CHECK_OK(fooStreamQuery(s));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(exception_in_a_kernel_is_a_launch_failure) {
  CHECK_OK(harness::launch(nullptr, [] { throw std::runtime_error("boom in kernel"); }));
  CHECK_ERR(fooDeviceSynchronize(), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("boom in kernel");
  CHECK_OK(fooDeviceSynchronize());
}

TEST(blocking_calls_inside_a_kernel_are_refused) {
  std::atomic<fooError_t> sync_result{fooSuccess};
  std::atomic<fooError_t> dev_sync_result{fooSuccess};
  CHECK_OK(harness::launch(nullptr, [&] {
    sync_result = fooStreamSynchronize(nullptr);
    dev_sync_result = fooDeviceSynchronize();
  }));
  CHECK_OK(fooStreamSynchronize(nullptr));
  CHECK(sync_result == fooErrorNotPermitted);
  CHECK(dev_sync_result == fooErrorNotPermitted);
  CHECK_ERR(fooKernelReportError("not in a kernel"), fooErrorNotPermitted);
}

TEST(event_synchronize_reports_a_failure_before_its_record) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(launch_slow_failure(s, "weights are NaN"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventSynchronize(e), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("weights are NaN");
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(event_query_reports_a_failure_once_the_record_completes) {
  fooStream_t s;
  fooEvent_t e;
  Gate gate;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreateWithFlags(&e, fooEventDisableTiming));
  CHECK_OK(gate.launch_failure(s, "shape mismatch in layer 3"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventQuery(e), fooErrorNotReady);  // not complete: nothing to report yet
  gate.open();
  fooError_t q;
  do {
    q = fooEventQuery(e);
  } while (q == fooErrorNotReady);
  CHECK(q == fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("shape mismatch in layer 3");
  CHECK_OK(fooEventQuery(e));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(a_failure_reported_by_an_event_is_not_reported_again) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(launch_slow_failure(s, "reported once"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventSynchronize(e), fooErrorLaunchFailure);
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooStreamQuery(s));
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooEventSynchronize(e));
  CHECK_OK(fooEventQuery(e));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(a_failure_reported_by_its_stream_is_not_reported_by_an_event) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(launch_slow_failure(s, "seen by the stream"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);
  CHECK_OK(fooEventSynchronize(e));
  CHECK_OK(fooEventQuery(e));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(an_event_recorded_before_a_failure_does_not_report_it) {
  fooStream_t s;
  fooEvent_t before;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&before));
  CHECK_OK(harness::launch_sleep(s, 20));
  CHECK_OK(fooEventRecord(before, s));
  CHECK_OK(harness::launch(s, [] { fooKernelReportError("after the record"); }));
  CHECK_OK(fooEventSynchronize(before));
  CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);  // still unreported until here
  CHECK_DETAIL_HAS("after the record");
  CHECK_OK(fooEventQuery(before));
  CHECK_OK(fooEventDestroy(before));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(the_earliest_unreported_failure_is_the_one_reported) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(launch_slow_failure(s, "first failure"));
  CHECK_OK(harness::launch(s, [] { fooKernelReportError("second failure"); }));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventSynchronize(e), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("first failure");
  CHECK_OK(fooStreamSynchronize(s));  // the second came while the first was pending
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

// Kernels queued back to back may run as one batch; a failure still reaches
// the stream before the next kernel runs, so a query made while that kernel
// runs reports it, and a failure after it is kept for the next report.
TEST(a_failure_is_reported_while_the_kernels_after_it_run) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::atomic<bool> first_done{false}, go{false};
  CHECK_OK(harness::launch_sleep(s, 20));  // the kernels below queue up behind it
  CHECK_OK(harness::launch(s, [&first_done] {
    fooKernelReportError("first failure");
    first_done = true;
  }));
  CHECK_OK(harness::launch(s, [&go] {
    while (!go) std::this_thread::yield();
    fooKernelReportError("second failure");
  }));
  while (!first_done) std::this_thread::yield();
  auto t0 = std::chrono::steady_clock::now();
  fooError_t q = fooErrorNotReady;
  while (q == fooErrorNotReady && harness::ms_since(t0) < 5000) q = fooStreamQuery(s);
  go = true;
  CHECK(q == fooErrorLaunchFailure);  // the second kernel is still running
  CHECK_DETAIL_HAS("first failure");
  CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("second failure");
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(a_stream_keeps_working_after_an_event_reported_its_failure) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(launch_slow_failure(s, "first failure"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventSynchronize(e), fooErrorLaunchFailure);
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) CHECK_OK(harness::launch(s, [&] { ++ran; }));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_OK(fooEventSynchronize(e));
  CHECK(ran == 10);
  // A failure after the reported one is a new one, reported in its turn.
  CHECK_OK(launch_slow_failure(s, "next failure"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventSynchronize(e), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("next failure");
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(a_failure_reaches_a_stream_that_waited_on_a_covering_event) {
  fooStream_t origin, waiter;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&origin));
  CHECK_OK(fooStreamCreate(&waiter));
  CHECK_OK(fooEventCreateWithFlags(&e, fooEventDisableTiming));
  CHECK_OK(launch_slow_failure(origin, "gradient is NaN"));
  CHECK_OK(fooEventRecord(e, origin));
  CHECK_OK(fooStreamWaitEvent(waiter, e, 0));
  std::atomic<bool> ran{false};
  CHECK_OK(harness::launch(waiter, [&] { ran = true; }));
  CHECK_ERR(fooStreamSynchronize(waiter), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("gradient is NaN");
  CHECK(ran);  // the failure is reported, not a reason to skip the work
  CHECK_OK(fooStreamSynchronize(origin));
  CHECK_OK(fooEventSynchronize(e));
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(origin));
  CHECK_OK(fooStreamDestroy(waiter));
}

TEST(a_failure_follows_waits_transitively_and_across_devices) {
  fooStream_t first, middle, last;
  fooEvent_t after_first, after_middle;
  CHECK_OK(fooStreamCreate(&first));
  CHECK_OK(fooStreamCreate(&middle));
  CHECK_OK(fooEventCreate(&after_first));
  CHECK_OK(fooEventCreate(&after_middle));
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&last));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(launch_slow_failure(first, "failed two hops away"));
  CHECK_OK(fooEventRecord(after_first, first));
  CHECK_OK(fooStreamWaitEvent(middle, after_first, 0));
  CHECK_OK(harness::launch_sleep(middle, 10));
  CHECK_OK(fooEventRecord(after_middle, middle));
  CHECK_OK(fooStreamWaitEvent(last, after_middle, 0));
  CHECK_OK(harness::launch(last, [] {}));
  CHECK_OK(fooSetDevice(1));
  CHECK_ERR(fooDeviceSynchronize(), fooErrorLaunchFailure);  // device 1 only holds `last`
  CHECK_DETAIL_HAS("failed two hops away");
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooEventSynchronize(after_first));
  CHECK_OK(fooEventSynchronize(after_middle));
  for (fooEvent_t e : {after_first, after_middle}) CHECK_OK(fooEventDestroy(e));
  for (fooStream_t s : {first, middle, last}) CHECK_OK(fooStreamDestroy(s));
}

TEST(a_wait_on_a_record_made_before_a_failure_does_not_pass_it_on) {
  fooStream_t origin, waiter;
  fooEvent_t before;
  CHECK_OK(fooStreamCreate(&origin));
  CHECK_OK(fooStreamCreate(&waiter));
  CHECK_OK(fooEventCreate(&before));
  CHECK_OK(harness::launch_sleep(origin, 20));
  CHECK_OK(fooEventRecord(before, origin));
  CHECK_OK(launch_slow_failure(origin, "after the record"));
  CHECK_OK(fooStreamWaitEvent(waiter, before, 0));
  CHECK_OK(harness::launch(waiter, [] {}));
  CHECK_OK(fooStreamSynchronize(waiter));
  CHECK_ERR(fooStreamSynchronize(origin), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("after the record");
  CHECK_OK(fooEventDestroy(before));
  CHECK_OK(fooStreamDestroy(origin));
  CHECK_OK(fooStreamDestroy(waiter));
}

TEST(a_wait_on_a_completed_record_still_passes_its_failure_on) {
  fooStream_t origin, waiter;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&origin));
  CHECK_OK(fooStreamCreate(&waiter));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(harness::launch(origin, [] { fooKernelReportError("already over"); }));
  CHECK_OK(fooEventRecord(e, origin));
  // Most likely lets the record complete before the wait; the outcome must
  // be the same if it has not.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_OK(fooStreamWaitEvent(waiter, e, 0));
  CHECK_ERR(fooStreamSynchronize(waiter), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("already over");
  CHECK_OK(fooStreamSynchronize(origin));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(origin));
  CHECK_OK(fooStreamDestroy(waiter));
}

TEST(a_waiting_stream_reports_its_own_earlier_failure_first) {
  fooStream_t origin, waiter;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&origin));
  CHECK_OK(fooStreamCreate(&waiter));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(launch_slow_failure(origin, "origin's failure"));
  CHECK_OK(fooEventRecord(e, origin));
  CHECK_OK(harness::launch(waiter, [] { fooKernelReportError("waiter's own failure"); }));
  CHECK_OK(fooStreamWaitEvent(waiter, e, 0));
  CHECK_ERR(fooStreamSynchronize(waiter), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("waiter's own failure");
  CHECK_OK(fooStreamSynchronize(waiter));  // carries one failure at a time...
  CHECK_ERR(fooStreamSynchronize(origin), fooErrorLaunchFailure);  // ...the other is still reported
  CHECK_DETAIL_HAS("origin's failure");
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(origin));
  CHECK_OK(fooStreamDestroy(waiter));
}

TEST(an_event_that_ignores_failures_leaves_them_to_the_stream) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreateWithFlags(&e, fooEventDisableTiming | fooEventIgnoreFailures));
  CHECK_OK(launch_slow_failure(s, "left for the stream"));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_OK(fooEventSynchronize(e));
  CHECK_OK(fooEventQuery(e));
  CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("left for the stream");
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

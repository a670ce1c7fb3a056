// Events: record, query, synchronize, timing, re-recording, cross-stream
// and cross-device waits.
#include <atomic>

#include "harness.h"

TEST(never_recorded_event_is_complete) {
  fooEvent_t e;
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(fooEventQuery(e));
  CHECK_OK(fooEventSynchronize(e));
  CHECK_OK(fooStreamWaitEvent(nullptr, e, 0));  // no-op
  CHECK_OK(fooEventDestroy(e));
}

TEST(record_query_synchronize) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreateWithFlags(&e, fooEventDisableTiming));
  CHECK_OK(harness::launch_sleep(s, 100));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_ERR(fooEventQuery(e), fooErrorNotReady);
  CHECK_OK(fooEventSynchronize(e));
  CHECK_OK(fooEventQuery(e));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(elapsed_time_measures_a_sleep) {
  fooStream_t s;
  fooEvent_t start, end;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&start));
  CHECK_OK(fooEventCreateWithFlags(&end, fooEventBlockingSync));
  CHECK_OK(fooEventRecord(start, s));
  CHECK_OK(harness::launch_sleep(s, 50));
  CHECK_OK(fooEventRecord(end, s));
  float ms = 0;
  CHECK_ERR(fooEventElapsedTime(&ms, start, end), fooErrorNotReady);
  CHECK_OK(fooEventSynchronize(end));
  CHECK_OK(fooEventElapsedTime(&ms, start, end));
  CHECK(ms >= 49.9f);
  CHECK(ms < 65.0f);
  CHECK_OK(fooEventDestroy(start));
  CHECK_OK(fooEventDestroy(end));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(elapsed_time_errors) {
  fooEvent_t timed, untimed, unrecorded;
  CHECK_OK(fooEventCreate(&timed));
  CHECK_OK(fooEventCreateWithFlags(&untimed, fooEventDisableTiming));
  CHECK_OK(fooEventCreate(&unrecorded));
  CHECK_OK(fooEventRecord(timed, nullptr));
  CHECK_OK(fooEventRecord(untimed, nullptr));
  CHECK_OK(fooDeviceSynchronize());
  float ms;
  CHECK_ERR(fooEventElapsedTime(&ms, timed, untimed), fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("DisableTiming");
  CHECK_ERR(fooEventElapsedTime(&ms, unrecorded, timed), fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("not been recorded");
  CHECK_ERR(fooEventElapsedTime(nullptr, timed, timed), fooErrorInvalidValue);
  CHECK_OK(fooEventElapsedTime(&ms, timed, timed));
  CHECK(ms == 0.0f);
  // Events of two devices are not timed against each other (CUDA refuses).
  fooEvent_t elsewhere;
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooEventCreate(&elsewhere));
  CHECK_OK(fooEventRecord(elsewhere, nullptr));
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooSetDevice(0));
  CHECK_ERR(fooEventElapsedTime(&ms, timed, elsewhere), fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("device 0 and the end event to device 1");
  CHECK_OK(fooEventDestroy(elsewhere));
  for (fooEvent_t e : {timed, untimed, unrecorded}) CHECK_OK(fooEventDestroy(e));
  CHECK_ERR(fooEventQuery(timed), fooErrorInvalidResourceHandle);
  CHECK_ERR(fooEventCreateWithFlags(&timed, 0x40), fooErrorInvalidValue);
}

TEST(wait_event_orders_streams_without_blocking_the_host) {
  fooStream_t a, b;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&a));
  CHECK_OK(fooStreamCreate(&b));
  CHECK_OK(fooEventCreateWithFlags(&e, fooEventDisableTiming));
  std::atomic<int> step{0};
  std::atomic<int> seen_by_b{-1};
  CHECK_OK(harness::launch(a, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    step = 1;
  }));
  CHECK_OK(fooEventRecord(e, a));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(fooStreamWaitEvent(b, e, 0));
  CHECK_OK(harness::launch(b, [&] { seen_by_b = step.load(); }));
  CHECK(harness::ms_since(t0) < 50);  // the host did not wait
  CHECK_OK(fooStreamSynchronize(b));
  CHECK(seen_by_b == 1);
  CHECK_ERR(fooStreamWaitEvent(b, e, 1), fooErrorInvalidValue);
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(a));
  CHECK_OK(fooStreamDestroy(b));
}

TEST(wait_event_across_devices) {
  fooStream_t on1, on0;
  fooEvent_t e;
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&on1));
  CHECK_OK(fooEventCreate(&e));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooStreamCreate(&on0));
  std::atomic<bool> written{false};
  std::atomic<bool> seen{false};
  CHECK_OK(harness::launch(on1, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    written = true;
  }));
  CHECK_OK(fooEventRecord(e, on1));
  CHECK_OK(fooStreamWaitEvent(on0, e, 0));
  CHECK_OK(harness::launch(on0, [&] { seen = written.load(); }));
  CHECK_OK(fooStreamSynchronize(on0));
  CHECK(seen);
  // Recording needs a stream of the event's own device.
  CHECK_ERR(fooEventRecord(e, on0), fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("foo device 1");
  int d = -1;
  CHECK_OK(fooEventGetDevice(e, &d));
  CHECK(d == 1);
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(on0));
  CHECK_OK(fooStreamDestroy(on1));
}

// A wait captures the record made before it; re-recording the event later
// moves queries and synchronizations on but not the captured wait.
TEST(rerecording_follows_cuda) {
  fooStream_t slow, fast, waiter;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&slow));
  CHECK_OK(fooStreamCreate(&fast));
  CHECK_OK(fooStreamCreate(&waiter));
  CHECK_OK(fooEventCreateWithFlags(&e, fooEventDisableTiming));
  std::atomic<bool> slow_done{false};
  std::atomic<bool> seen{false};
  CHECK_OK(harness::launch(slow, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    slow_done = true;
  }));
  CHECK_OK(fooEventRecord(e, slow));
  CHECK_OK(fooStreamWaitEvent(waiter, e, 0));
  CHECK_OK(harness::launch(waiter, [&] { seen = slow_done.load(); }));
  CHECK_OK(fooEventRecord(e, fast));  // fast is idle: completes at once
  CHECK_OK(fooEventQuery(e));         // refers to the newest record
  CHECK_OK(fooStreamSynchronize(waiter));
  CHECK(seen);                        // but the wait kept the old one
  CHECK_OK(fooEventDestroy(e));
  for (fooStream_t s : {slow, fast, waiter}) CHECK_OK(fooStreamDestroy(s));
}

TEST(destroying_an_event_with_pending_work_is_safe) {
  fooStream_t s, w;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooStreamCreate(&w));
  CHECK_OK(fooEventCreate(&e));
  std::atomic<bool> done{false};
  std::atomic<bool> seen{false};
  CHECK_OK(harness::launch(s, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
  }));
  CHECK_OK(fooEventRecord(e, s));
  CHECK_OK(fooStreamWaitEvent(w, e, 0));
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(harness::launch(w, [&] { seen = done.load(); }));
  CHECK_OK(fooStreamSynchronize(w));
  CHECK(seen);
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooStreamDestroy(w));
}

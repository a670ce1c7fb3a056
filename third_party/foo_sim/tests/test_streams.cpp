// Streams: FIFO order, concurrency, query/synchronize, priorities, destroy.
#include <atomic>
#include <mutex>
#include <vector>

#include "harness.h"

TEST(work_on_one_stream_runs_in_order) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::vector<int> order;  // only touched by kernels of one stream
  CHECK_OK(harness::launch_sleep(s, 20));
  for (int i = 0; i < 2000; ++i) CHECK_OK(harness::launch(s, [&order, i] { order.push_back(i); }));
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(order.size() == 2000);
  for (int i = 0; i < 2000; ++i) CHECK(order[i] == i);
  CHECK_OK(fooStreamDestroy(s));
}

// Work launched back to back starts on an executor of its own accord:
// nothing waits for a synchronization.
TEST(work_launched_back_to_back_runs_without_a_synchronization) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::atomic<int> ran{0};
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 10; ++i) CHECK_OK(harness::launch(s, [&ran] { ++ran; }));
    auto t0 = std::chrono::steady_clock::now();
    while (ran.load() < (round + 1) * 10 && harness::ms_since(t0) < 5000) std::this_thread::yield();
    CHECK(ran.load() == (round + 1) * 10);
  }
  CHECK_OK(fooStreamDestroy(s));
}

TEST(two_streams_overlap) {
  fooStream_t a, b;
  CHECK_OK(fooStreamCreate(&a));
  CHECK_OK(fooStreamCreate(&b));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(harness::launch_sleep(a, 200));
  CHECK_OK(harness::launch_sleep(b, 200));
  CHECK(harness::ms_since(t0) < 100);  // launching does not wait
  CHECK_OK(fooStreamSynchronize(a));
  CHECK_OK(fooStreamSynchronize(b));
  double ms = harness::ms_since(t0);
  CHECK(ms >= 199);
  CHECK(ms < 340);  // serialized would be 400
  CHECK_OK(fooStreamDestroy(a));
  CHECK_OK(fooStreamDestroy(b));
}

TEST(default_stream_and_host_run_concurrently) {
  std::atomic<bool> ran{false};
  CHECK_OK(harness::launch(nullptr, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ran = true;
  }));
  CHECK(!ran);
  CHECK_ERR(fooStreamQuery(nullptr), fooErrorNotReady);
  CHECK_OK(fooStreamSynchronize(nullptr));
  CHECK(ran);
  CHECK_OK(fooStreamQuery(nullptr));
}

TEST(destroy_returns_at_once_and_queued_work_still_runs) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::atomic<int> ran{0};
  CHECK_OK(harness::launch_sleep(s, 50));
  CHECK_OK(harness::launch(s, [&] { ++ran; }));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(fooStreamDestroy(s));
  CHECK(harness::ms_since(t0) < 40);
  CHECK_OK(fooDeviceSynchronize());
  CHECK(ran == 1);
  // A destroyed stream is a stale handle, not a crash.
  CHECK_ERR(fooStreamQuery(s), fooErrorInvalidResourceHandle);
  CHECK_ERR(harness::launch(s, [] {}), fooErrorInvalidResourceHandle);
  CHECK_ERR(fooStreamDestroy(s), fooErrorInvalidResourceHandle);
  CHECK_ERR(fooStreamDestroy(nullptr), fooErrorInvalidResourceHandle);
}

TEST(priorities_are_clamped_to_the_device_range) {
  int least, greatest;
  CHECK_OK(fooDeviceGetStreamPriorityRange(&least, &greatest));
  fooStream_t hi, lo, mid;
  CHECK_OK(fooStreamCreateWithPriority(&hi, fooStreamDefault, greatest - 10));
  CHECK_OK(fooStreamCreateWithPriority(&lo, fooStreamDefault, least + 10));
  CHECK_OK(fooStreamCreateWithPriority(&mid, fooStreamDefault, greatest + 1));
  int p;
  CHECK_OK(fooStreamGetPriority(hi, &p));
  CHECK(p == greatest);
  CHECK_OK(fooStreamGetPriority(lo, &p));
  CHECK(p == least);
  CHECK_OK(fooStreamGetPriority(mid, &p));
  CHECK(p == greatest + 1);
  unsigned flags;
  CHECK_OK(fooStreamGetFlags(hi, &flags));
  CHECK(flags == fooStreamDefault);
  CHECK_OK(fooStreamGetPriority(nullptr, &p));
  CHECK(p == 0);
  for (fooStream_t s : {hi, lo, mid}) CHECK_OK(fooStreamDestroy(s));
}

TEST(stream_belongs_to_the_current_device) {
  fooStream_t s;
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooSetDevice(0));
  int d = -1;
  CHECK_OK(fooStreamGetDevice(s, &d));
  CHECK(d == 1);
  CHECK_OK(fooStreamGetDevice(nullptr, &d));
  CHECK(d == 0);
  CHECK_OK(fooStreamDestroy(s));  // from another current device: fine
}

TEST(default_stream_handles_are_explicit_per_device) {
  fooStream_t d0, d1;
  CHECK_OK(fooDeviceGetDefaultStream(0, &d0));
  CHECK_OK(fooDeviceGetDefaultStream(1, &d1));
  CHECK(d0 != nullptr && d1 != nullptr && d0 != d1);
  int dev = -1;
  CHECK_OK(fooStreamGetDevice(d1, &dev));
  CHECK(dev == 1);
  std::atomic<bool> ran{false};
  CHECK_OK(harness::launch(d1, [&] { ran = true; }));  // current device is 0
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamSynchronize(nullptr));  // null: device 1's default stream now
  CHECK(ran);
  CHECK_OK(fooSetDevice(0));
  CHECK_ERR(fooStreamDestroy(d1), fooErrorInvalidResourceHandle);
  CHECK_ERR(fooDeviceGetDefaultStream(2, &d0), fooErrorInvalidDevice);
}

TEST(bad_arguments) {
  fooStream_t s;
  CHECK_ERR(fooStreamCreate(nullptr), fooErrorInvalidValue);
  CHECK_ERR(fooStreamCreateWithFlags(&s, 0x80), fooErrorInvalidValue);
  CHECK_DETAIL_HAS("0x80");
  // CUDA's cudaStreamNonBlocking value: every stream here already is one.
  CHECK_ERR(fooStreamCreateWithFlags(&s, 0x1), fooErrorInvalidValue);
  CHECK_DETAIL_HAS("0x1");
  CHECK_ERR(fooStreamCreateWithPriority(&s, 0x1, 0), fooErrorInvalidValue);
  CHECK_DETAIL_HAS("0x1");
  CHECK_ERR(fooLaunchHostFunc(nullptr, nullptr, nullptr), fooErrorInvalidValue);
  CHECK_ERR(fooStreamGetPriority(nullptr, nullptr), fooErrorInvalidValue);
  auto* bogus = reinterpret_cast<fooStream_t>(0x1234);
  CHECK_ERR(fooStreamSynchronize(bogus), fooErrorInvalidResourceHandle);
}

// Kernels that use OpenMP keep their executor's warm thread team only if a
// stream's kernels stay on one executor. When the host is slower than the
// kernels, the executor a stream ran on has gone to sleep by the next
// launch, and is the one woken for it.
TEST(a_stream_wakes_the_executor_it_last_ran_on) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 20; ++i) {
    std::thread::id id;
    CHECK_OK(harness::launch(s, [&id] { id = std::this_thread::get_id(); }));
    CHECK_OK(harness::wait_by_polling(s));
    CHECK(id != std::this_thread::get_id());
    threads.push_back(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // every executor is asleep by now
  }
  // Waking an arbitrary sleeper hops on most launches (3 in 4 with four
  // executors); a loaded machine may keep the last executor awake past the
  // pause now and then, letting another one take the work: a few hops are
  // tolerated.
  int hops = 0;
  for (size_t i = 1; i < threads.size(); ++i) hops += threads[i] != threads[i - 1];
  CHECK(hops <= 3);
  CHECK_OK(fooStreamDestroy(s));
}

// A stream's queue is a ring that grows: work queued while it has wrapped
// around (the executor popped from the front as the host pushed at the
// back) must still run in launch order after it grows.
TEST(a_queue_that_wrapped_around_keeps_its_order_when_it_grows) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::atomic<int> gate{0};
  auto wait_for_gate = [&gate](int value) {
    return [&gate, value] {
      while (gate.load() < value) std::this_thread::yield();
    };
  };
  std::vector<int> order;  // only touched by kernels of one stream
  std::atomic<int> ran{0};
  auto record = [&order, &ran](int i) {
    return [&order, &ran, i] {
      order.push_back(i);
      ++ran;
    };
  };
  CHECK_OK(harness::launch(s, wait_for_gate(1)));
  for (int i = 0; i < 10; ++i) CHECK_OK(harness::launch(s, record(i)));
  gate = 1;
  while (ran.load() < 10) std::this_thread::yield();  // the front has moved past the first slots
  CHECK_OK(harness::launch(s, wait_for_gate(2)));
  for (int i = 10; i < 100; ++i) CHECK_OK(harness::launch(s, record(i)));  // wraps, then grows
  gate = 2;
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[i] == i);
  CHECK_OK(fooStreamDestroy(s));
}

// Devices: count, current device per thread, properties, lazy start.
#include <atomic>
#include <cstring>
#include <thread>

#include "harness.h"

// Runs first: nothing so far has queued work, so no thread may exist yet.
TEST(queries_start_no_thread) {
  size_t before = harness::thread_count();
  int count = -1;
  CHECK_OK(fooGetDeviceCount(&count));
  CHECK(count == 2);
  fooDeviceProp prop;
  CHECK_OK(fooGetDeviceProperties(&prop, 1));
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooSetDevice(0));
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 1024));
  CHECK_OK(fooFree(p));
  CHECK(harness::thread_count() == before);
  CHECK(fooRuntimeIsStarted() == 0);

  CHECK_OK(fooInit());
  CHECK(fooRuntimeIsStarted() == 1);
  CHECK_OK(fooInit());  // once only
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  // At least: a sanitizer may add a thread of its own with the first one.
  CHECK(harness::thread_count() >= before + 2 * static_cast<size_t>(prop.executorCount));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(current_device_is_per_thread) {
  CHECK_OK(fooSetDevice(1));
  int here = -1;
  CHECK_OK(fooGetDevice(&here));
  CHECK(here == 1);
  std::atomic<int> there{-1};
  std::thread([&] {
    int d = -1;
    if (fooGetDevice(&d) == fooSuccess) there = d;
  }).join();
  CHECK(there == 0);  // a new thread starts on device 0
  CHECK_OK(fooSetDevice(0));
}

TEST(invalid_device_is_rejected_with_range) {
  CHECK_ERR(fooSetDevice(2), fooErrorInvalidDevice);
  CHECK_DETAIL_HAS("invalid foo device 2");
  CHECK_DETAIL_HAS("0 to 1");
  CHECK_ERR(fooSetDevice(-1), fooErrorInvalidDevice);
  fooDeviceProp prop;
  CHECK_ERR(fooGetDeviceProperties(&prop, 7), fooErrorInvalidDevice);
  CHECK_ERR(fooGetDeviceProperties(nullptr, 0), fooErrorInvalidValue);
  CHECK_ERR(fooGetDeviceCount(nullptr), fooErrorInvalidValue);
  CHECK_ERR(fooGetDevice(nullptr), fooErrorInvalidValue);
  int d = -1;
  CHECK_OK(fooGetDevice(&d));
  CHECK(d == 0);  // a failed set leaves the current device alone
}

TEST(properties_describe_the_device) {
  fooDeviceProp prop;
  CHECK_OK(fooGetDeviceProperties(&prop, 0));
  CHECK(std::strstr(prop.name, "foo") != nullptr);
  CHECK(prop.totalGlobalMem == (size_t{8} << 30));  // FOO_SIM_DEVICE_MEMORY=8GiB
  CHECK(prop.major == 1 && prop.minor == 0);
  CHECK(prop.executorCount == 4);
  int least = 1, greatest = 1;
  CHECK_OK(fooDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK(least == 0 && greatest < 0);
  CHECK(prop.leastStreamPriority == least && prop.greatestStreamPriority == greatest);
}

TEST(device_synchronize_waits_for_every_stream_of_the_current_device_only) {
  fooStream_t a, b, other;
  CHECK_OK(fooStreamCreate(&a));
  CHECK_OK(fooStreamCreate(&b));
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&other));
  CHECK_OK(harness::launch_sleep(other, 400));
  CHECK_OK(fooSetDevice(0));
  std::atomic<int> done{0};
  CHECK_OK(harness::launch(a, [&] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); ++done; }));
  CHECK_OK(harness::launch(b, [&] { std::this_thread::sleep_for(std::chrono::milliseconds(80)); ++done; }));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(fooDeviceSynchronize());
  CHECK(done == 2);
  CHECK(harness::ms_since(t0) < 300);  // did not wait for device 1's 400 ms
  CHECK(fooStreamQuery(other) == fooErrorNotReady);
  CHECK_OK(fooStreamSynchronize(other));
  for (fooStream_t s : {a, b}) CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooStreamDestroy(other));
}

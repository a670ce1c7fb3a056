// Configuration from FOO_SIM_* variables. ctest runs each case in its own
// process with the environment the case is named after.
#include <atomic>
#include <cstring>
#include <string>

#include "harness.h"

TEST(no_devices) {  // FOO_SIM_DEVICE_COUNT=0
  int count = -1;
  CHECK_ERR(fooGetDeviceCount(&count), fooErrorNoDevice);
  CHECK(count == 0);
  void* p;
  CHECK_ERR(fooMalloc(&p, 16), fooErrorNoDevice);
  fooStream_t s;
  CHECK_ERR(fooStreamCreate(&s), fooErrorNoDevice);
  CHECK_ERR(fooSetDevice(0), fooErrorNoDevice);
  CHECK_ERR(fooInit(), fooErrorNoDevice);
  CHECK(fooRuntimeIsStarted() == 0);
}

TEST(four_devices) {  // FOO_SIM_DEVICE_COUNT=4
  int count = 0;
  CHECK_OK(fooGetDeviceCount(&count));
  CHECK(count == 4);
  for (int d = 0; d < 4; ++d) {
    CHECK_OK(fooSetDevice(d));
    int* p = nullptr;
    CHECK_OK(fooMalloc(reinterpret_cast<void**>(&p), sizeof(int)));
    CHECK_OK(harness::launch(nullptr, [p, d] { *p = d; }));
    int v = -1;
    CHECK_OK(fooMemcpy(&v, p, sizeof(int), fooMemcpyDeviceToHost));
    CHECK(v == d);
    fooPointerAttributes attr;
    CHECK_OK(fooPointerGetAttributes(&attr, p));
    CHECK(attr.device == d);
    CHECK_OK(fooFree(p));
  }
  CHECK_ERR(fooSetDevice(4), fooErrorInvalidDevice);
  CHECK_DETAIL_HAS("0 to 3");
}

TEST(malformed_count) {  // FOO_SIM_DEVICE_COUNT=two
  int count = -1;
  CHECK_ERR(fooGetDeviceCount(&count), fooErrorInitializationError);
  CHECK_DETAIL_HAS("FOO_SIM_DEVICE_COUNT='two'");
  CHECK(count == 0);
  void* p;
  CHECK_ERR(fooMalloc(&p, 16), fooErrorInitializationError);
  CHECK_DETAIL_HAS("FOO_SIM_DEVICE_COUNT");
  CHECK_ERR(fooStreamSynchronize(nullptr), fooErrorInitializationError);
}

TEST(malformed_memory) {  // FOO_SIM_DEVICE_MEMORY=12XB
  int count = -1;
  CHECK_ERR(fooGetDeviceCount(&count), fooErrorInitializationError);
  CHECK_DETAIL_HAS("FOO_SIM_DEVICE_MEMORY='12XB'");
  CHECK_DETAIL_HAS("512MiB");  // says what would be accepted
}

TEST(malformed_copy_threads) {  // FOO_SIM_COPY_THREADS=0
  int count = -1;
  CHECK_ERR(fooGetDeviceCount(&count), fooErrorInitializationError);
  CHECK_DETAIL_HAS("FOO_SIM_COPY_THREADS='0'");
  CHECK_DETAIL_HAS("1 to 256");
}

TEST(malformed_race_check) {  // FOO_SIM_RACE_CHECK=maybe
  int count = -1;
  CHECK_ERR(fooGetDeviceCount(&count), fooErrorInitializationError);
  CHECK_DETAIL_HAS("FOO_SIM_RACE_CHECK='maybe'");
  CHECK_DETAIL_HAS("warn or raise");
}

TEST(memory_units) {  // FOO_SIM_DEVICE_MEMORY=512MiB
  fooDeviceProp prop;
  CHECK_OK(fooGetDeviceProperties(&prop, 0));
  CHECK(prop.totalGlobalMem == (size_t{512} << 20));
  size_t free, total;
  CHECK_OK(fooMemGetInfo(&free, &total));
  CHECK(total == (size_t{512} << 20) && free == total);
}

TEST(launch_blocking) {  // FOO_SIM_LAUNCH_BLOCKING=1
  std::atomic<bool> ran{false};
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(harness::launch(nullptr, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ran = true;
  }));
  CHECK(ran);
  CHECK(harness::ms_since(t0) >= 99);
  // The failure is reported by the launch that caused it.
  CHECK_ERR(harness::launch(nullptr, [] { fooKernelReportError("bad kernel"); }), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("bad kernel");
  CHECK_OK(fooStreamQuery(nullptr));
  fooEvent_t after;  // ...and only there
  CHECK_OK(fooEventCreate(&after));
  CHECK_OK(fooEventRecord(after, nullptr));
  CHECK_OK(fooEventSynchronize(after));
  CHECK_OK(fooEventDestroy(after));
}

TEST(launch_delay) {  // FOO_SIM_LAUNCH_DELAY_US=200000
  std::atomic<bool> ran{false};
  fooEvent_t start, end;
  CHECK_OK(fooEventCreate(&start));
  CHECK_OK(fooEventCreate(&end));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(fooEventRecord(start, nullptr));
  CHECK_OK(harness::launch(nullptr, [&] { ran = true; }));
  CHECK_OK(fooEventRecord(end, nullptr));
  CHECK(harness::ms_since(t0) < 50);  // the launch itself is not delayed
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(!ran);  // a host that forgot to synchronize sees stale state
  CHECK_OK(fooStreamSynchronize(nullptr));
  CHECK(ran);
  float ms = 0;
  CHECK_OK(fooEventElapsedTime(&ms, start, end));
  CHECK(ms >= 199.0f);
  CHECK_OK(fooEventDestroy(start));
  CHECK_OK(fooEventDestroy(end));
}

// With a single executor, a free executor serves the highest-priority
// stream first, then lower ones; equal priorities in submission order.
TEST(priority) {  // FOO_SIM_DEVICE_EXECUTORS=1
  int least, greatest;
  CHECK_OK(fooDeviceGetStreamPriorityRange(&least, &greatest));
  fooStream_t blocker, low, high, low2;
  CHECK_OK(fooStreamCreateWithPriority(&blocker, 0, least));
  CHECK_OK(fooStreamCreateWithPriority(&low, 0, least));
  CHECK_OK(fooStreamCreateWithPriority(&low2, 0, least));
  CHECK_OK(fooStreamCreateWithPriority(&high, 0, greatest));
  std::string order;  // kernels never overlap: one executor
  CHECK_OK(harness::launch_sleep(blocker, 100));
  CHECK_OK(harness::launch(low, [&] { order += 'l'; }));
  CHECK_OK(harness::launch(low2, [&] { order += 'm'; }));
  CHECK_OK(harness::launch(high, [&] { order += 'H'; }));
  CHECK_OK(fooDeviceSynchronize());
  CHECK(order == "Hlm");
  for (fooStream_t s : {blocker, low, low2, high}) CHECK_OK(fooStreamDestroy(s));
}

// An executor may take several queued kernels of a stream at once, but a
// higher-priority stream that gets work meanwhile still goes before those
// kernels that have not started, as it would between single kernels.
TEST(priority_overtakes_queued_kernels) {  // FOO_SIM_DEVICE_EXECUTORS=1
  int least, greatest;
  CHECK_OK(fooDeviceGetStreamPriorityRange(&least, &greatest));
  fooStream_t low, high;
  CHECK_OK(fooStreamCreateWithPriority(&low, 0, least));
  CHECK_OK(fooStreamCreateWithPriority(&high, 0, greatest));
  std::string order;  // kernels never overlap: one executor
  std::atomic<bool> started{false};
  CHECK_OK(harness::launch(low, [&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }));
  for (char c : std::string("12345")) CHECK_OK(harness::launch(low, [&order, c] { order += c; }));
  while (!started) std::this_thread::yield();  // the executor has taken low's kernels
  CHECK_OK(harness::launch(high, [&] { order += 'H'; }));
  CHECK_OK(fooDeviceSynchronize());
  CHECK(order == "H12345");  // the kernels put back keep their order
  for (fooStream_t s : {low, high}) CHECK_OK(fooStreamDestroy(s));
}

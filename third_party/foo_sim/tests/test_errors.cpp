// Errors: names and strings, the last error, asynchronous kernel failures.
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "harness.h"

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

// Copies: every direction, synchronous and stream-ordered, and bad input.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "harness.h"

namespace {

std::vector<int> iota_vector(size_t n, int start) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

TEST(round_trip_host_device_host) {
  constexpr size_t n = 1 << 16;
  auto src = iota_vector(n, 7);
  std::vector<int> back(n, 0);
  void* dev = nullptr;
  CHECK_OK(fooMalloc(&dev, n * sizeof(int)));
  CHECK_OK(fooMemcpy(dev, src.data(), n * sizeof(int), fooMemcpyHostToDevice));
  void* dev2 = nullptr;
  CHECK_OK(fooMalloc(&dev2, n * sizeof(int)));
  CHECK_OK(fooMemcpy(dev2, dev, n * sizeof(int), fooMemcpyDeviceToDevice));
  CHECK_OK(fooMemcpy(back.data(), dev2, n * sizeof(int), fooMemcpyDeviceToHost));
  CHECK(back == src);
  std::vector<int> inferred(n, 0);
  CHECK_OK(fooMemcpy(inferred.data(), dev, n * sizeof(int), fooMemcpyDefault));
  CHECK(inferred == src);
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooFree(dev2));
}

TEST(synchronous_copy_is_ordered_after_queued_default_stream_work) {
  int* dev = nullptr;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&dev), sizeof(int)));
  CHECK_OK(harness::launch(nullptr, [dev] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    *dev = 99;
  }));
  int host = 0;
  CHECK_OK(fooMemcpy(&host, dev, sizeof(int), fooMemcpyDeviceToHost));
  CHECK(host == 99);
  CHECK_OK(fooFree(dev));
}

TEST(peer_copies_between_devices) {
  constexpr size_t n = 4096;
  auto src = iota_vector(n, 3);
  void* on0 = nullptr;
  void* on1 = nullptr;
  CHECK_OK(fooMalloc(&on0, n * sizeof(int)));
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooMalloc(&on1, n * sizeof(int)));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooMemcpy(on0, src.data(), n * sizeof(int), fooMemcpyHostToDevice));
  CHECK_OK(fooMemcpyPeer(on1, 1, on0, 0, n * sizeof(int)));
  std::vector<int> back(n, 0);
  CHECK_OK(fooMemcpy(back.data(), on1, n * sizeof(int), fooMemcpyDeviceToHost));
  CHECK(back == src);
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooMemsetAsync(on0, 0, n * sizeof(int), s));
  CHECK_OK(fooMemcpyPeerAsync(on1, 1, on0, 0, n * sizeof(int), s));
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooMemcpy(back.data(), on1, n * sizeof(int), fooMemcpyDefault));
  CHECK(back == std::vector<int>(n, 0));
  // The device arguments must match the pointers.
  CHECK_ERR(fooMemcpyPeer(on1, 0, on0, 0, n * sizeof(int)), fooErrorInvalidValue);
  CHECK_ERR(fooMemcpyPeer(on1, 5, on0, 0, n * sizeof(int)), fooErrorInvalidDevice);
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooFree(on0));
  CHECK_OK(fooFree(on1));
}

TEST(async_copy_with_pinned_memory_does_not_wait) {
  constexpr size_t bytes = 1 << 20;
  char* pinned = nullptr;
  char* dev = nullptr;
  CHECK_OK(fooMallocHost(reinterpret_cast<void**>(&pinned), bytes));
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&dev), bytes));
  CHECK_OK(fooMemset(dev, 7, bytes));
  std::fill(pinned, pinned + bytes, 0);
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch_sleep(s, 150));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(fooMemcpyAsync(pinned, dev, bytes, fooMemcpyDeviceToHost, s));
  CHECK(harness::ms_since(t0) < 75);
  CHECK(pinned[0] == 0 && pinned[bytes - 1] == 0);  // not arrived yet
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(pinned[0] == 7 && pinned[bytes - 1] == 7);
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooFreeHost(pinned));
}

TEST(async_copy_with_pageable_memory_completes_before_returning) {
  std::vector<char> pageable(4096, 0);
  char* dev = nullptr;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&dev), 4096));
  CHECK_OK(fooMemset(dev, 3, 4096));
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch_sleep(s, 50));
  CHECK_OK(fooMemcpyAsync(pageable.data(), dev, 4096, fooMemcpyDeviceToHost, s));
  CHECK(pageable[0] == 3 && pageable[4095] == 3);
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooFree(dev));
}

TEST(bad_copies_are_rejected) {
  std::vector<char> host(256);
  char* dev = nullptr;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&dev), 128));
  CHECK_ERR(fooMemcpy(dev, host.data(), 256, fooMemcpyHostToDevice), fooErrorInvalidValue);  // overflow
  CHECK_DETAIL_HAS("past the end");
  CHECK_ERR(fooMemcpy(host.data(), host.data() + 128, 64, fooMemcpyHostToDevice), fooErrorInvalidMemcpyDirection);
  CHECK_ERR(fooMemcpy(dev, host.data(), 64, fooMemcpyDeviceToHost), fooErrorInvalidMemcpyDirection);
  CHECK_ERR(fooMemcpy(dev, host.data(), 64, static_cast<fooMemcpyKind>(9)), fooErrorInvalidMemcpyDirection);
  CHECK_ERR(fooMemcpy(nullptr, host.data(), 64, fooMemcpyDefault), fooErrorInvalidValue);
  CHECK_ERR(fooMemcpyAsync(dev, nullptr, 64, fooMemcpyDefault, nullptr), fooErrorInvalidValue);
  CHECK_OK(fooMemcpy(nullptr, nullptr, 0, fooMemcpyDefault));  // nothing to copy
  CHECK_OK(fooMemcpy(host.data(), host.data() + 128, 64, fooMemcpyHostToHost));
  CHECK_OK(fooFree(dev));
}

// Copies of several MiB are split across copy threads (FOO_SIM_COPY_THREADS):
// every byte lands, whatever the split, and overlapping ranges still move
// as memmove does.
TEST(large_copies_are_exact) {
  constexpr size_t n = (size_t{9} << 20) + 37;  // not a multiple of any piece size
  std::vector<unsigned char> src(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  void* pinned = nullptr;
  CHECK_OK(fooMallocHost(&pinned, n));
  std::memcpy(pinned, src.data(), n);
  void *dev = nullptr, *dev2 = nullptr;
  CHECK_OK(fooMalloc(&dev, n));
  CHECK_OK(fooMalloc(&dev2, n));
  CHECK_OK(fooMemcpyAsync(dev, pinned, n, fooMemcpyHostToDevice, nullptr));
  CHECK_OK(fooMemcpyAsync(dev2, dev, n, fooMemcpyDeviceToDevice, nullptr));
  CHECK_OK(fooMemcpy(back.data(), dev2, n, fooMemcpyDeviceToHost));
  CHECK(back == src);
  // A shift within one allocation: the ranges overlap.
  constexpr size_t shift = (size_t{1} << 20) + 3;
  CHECK_OK(fooMemcpy(static_cast<char*>(dev2) + shift, dev2, n - shift, fooMemcpyDeviceToDevice));
  CHECK_OK(fooMemcpy(back.data(), dev2, n, fooMemcpyDeviceToHost));
  std::vector<unsigned char> want = src;
  std::memmove(want.data() + shift, want.data(), n - shift);
  CHECK(back == want);
  CHECK_OK(fooFreeHost(pinned));
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooFree(dev2));
}

// A registered copy runner moves every piece of a large copy (in any order,
// on any thread), and NULL gives the copies back to foo_sim's threads.
namespace {
struct RunnerLog {
  std::atomic<int> calls{0};
  std::atomic<size_t> pieces{0};
  std::atomic<int> width{0};  // what width() answers; 0 or less: every piece
};

int logged_width(void* user_data) { return static_cast<RunnerLog*>(user_data)->width.load(); }

void reversed_on_two_threads(size_t pieces, fooCopyPieceFn piece, void* piece_data, void* user_data) {
  auto* log = static_cast<RunnerLog*>(user_data);
  log->calls.fetch_add(1);
  log->pieces.fetch_add(pieces);
  std::thread odd([&] {
    for (size_t i = pieces; i-- > 0;) {
      if (i % 2 == 1) piece(i, piece_data);
    }
  });
  for (size_t i = pieces; i-- > 0;) {
    if (i % 2 == 0) piece(i, piece_data);
  }
  odd.join();
}
}  // namespace

TEST(a_registered_copy_runner_moves_every_piece) {
  constexpr size_t n = (size_t{7} << 20) + 101;
  std::vector<unsigned char> src(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>((i * 40503u) >> 7);
  void* dev = nullptr;
  CHECK_OK(fooMalloc(&dev, n));
  RunnerLog log;
  CHECK_OK(fooSetCopyRunner(&reversed_on_two_threads, nullptr, &log));
  CHECK_OK(fooMemcpy(dev, src.data(), n, fooMemcpyHostToDevice));
  CHECK_OK(fooMemcpy(back.data(), dev, n, fooMemcpyDeviceToHost));
  CHECK(back == src);
  CHECK(log.calls.load() == 2);
  CHECK(log.pieces.load() == 4);  // two copies of 7 MiB, in FOO_SIM_COPY_THREADS=2 pieces each
  std::vector<unsigned char> small(1000, 7), small_back(1000, 0);
  CHECK_OK(fooMemcpy(dev, small.data(), small.size(), fooMemcpyHostToDevice));  // one piece: no runner
  CHECK(log.calls.load() == 2);
  // The issuing thread's width caps the pieces: one piece needs no runner.
  CHECK_OK(fooSetCopyRunner(&reversed_on_two_threads, &logged_width, &log));
  log.width = 1;
  CHECK_OK(fooMemcpy(dev, src.data(), n, fooMemcpyHostToDevice));
  CHECK(log.calls.load() == 2);
  log.width = 8;  // more than FOO_SIM_COPY_THREADS: the configured number holds
  CHECK_OK(fooMemcpy(back.data(), dev, n, fooMemcpyDeviceToHost));
  CHECK(back == src);
  CHECK(log.calls.load() == 3);
  CHECK(log.pieces.load() == 6);
  CHECK_OK(fooSetCopyRunner(nullptr, nullptr, nullptr));
  std::fill(back.begin(), back.end(), 0);
  CHECK_OK(fooMemcpy(dev, src.data(), n, fooMemcpyHostToDevice));
  CHECK_OK(fooMemcpy(back.data(), dev, n, fooMemcpyDeviceToHost));
  CHECK(back == src);
  CHECK(log.calls.load() == 3);  // foo_sim's own threads moved those
  CHECK_OK(fooFree(dev));
}

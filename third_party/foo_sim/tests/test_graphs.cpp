// Stream capture and graph replay (foo_sim/foo_graph.h). Captured kernels
// are plain functions with data that outlives the graph: harness::launch's
// self-deleting closures run once, so they are used only outside captures.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "foo_sim/foo_profiler.h"
#include "harness.h"

namespace {

using Clock = std::chrono::steady_clock;

void add_one(void* p) { ++*static_cast<int*>(p); }
void twice(void* p) { *static_cast<int*>(p) *= 2; }
void sleep_for_ms(void* p) { std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(p))); }
int k100ms = 100;
int k200ms = 200;

// A kernel that appends a value to a shared log.
struct Log {
  std::mutex mutex;
  std::vector<int> values;
  std::vector<int> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return values;
  }
};
struct Entry {
  Log* log;
  int value;
};
void append(void* p) {
  auto* e = static_cast<Entry*>(p);
  std::lock_guard<std::mutex> lock(e->log->mutex);
  e->log->values.push_back(e->value);
}

fooStream_t new_stream() {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  return s;
}

fooStreamCaptureStatus status_of(fooStream_t s, unsigned long long* id = nullptr) {
  fooStreamCaptureStatus st;
  CHECK_OK(fooStreamGetCaptureInfo(s, &st, id));
  return st;
}

fooGraphExec_t instantiate(fooGraph_t g) {
  fooGraphExec_t x;
  CHECK_OK(fooGraphInstantiate(&x, g, 0));
  return x;
}

// After a capture failed: the stream is back to normal work.
void check_back_to_normal(fooStream_t s) {
  CHECK(status_of(s) == fooStreamCaptureStatusNone);
  std::atomic<bool> ran{false};
  CHECK_OK(harness::launch(s, [&] { ran = true; }));
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(ran);
}

// Ends the (invalidated) capture on s: EndCapture reports it, with no graph.
void check_invalidated_end(fooStream_t s) {
  CHECK(status_of(s) == fooStreamCaptureStatusInvalidated);
  int x = 0;
  CHECK_ERR(fooLaunchHostFunc(s, add_one, &x), fooErrorStreamCaptureInvalidated);
  fooGraph_t g = reinterpret_cast<fooGraph_t>(&x);
  CHECK_ERR(fooStreamEndCapture(s, &g), fooErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  CHECK_DETAIL_HAS("invalidated");
  check_back_to_normal(s);
  CHECK(x == 0);
}

const fooStreamCaptureMode kModes[] = {fooStreamCaptureModeGlobal, fooStreamCaptureModeThreadLocal,
                                       fooStreamCaptureModeRelaxed};

// Begins a capture in `mode` on a new stream on another thread, runs `body`
// on this thread while it is under way, then lets that thread end it.
// Returns what its fooStreamEndCapture returned.
fooError_t with_capture_on_other_thread(fooStreamCaptureMode mode, const std::function<void()>& body) {
  fooStream_t s = new_stream();
  std::promise<void> begun_p, done_p;
  auto begun = begun_p.get_future();
  auto done = done_p.get_future().share();
  fooError_t began = fooErrorNotReady, ended = fooErrorNotReady;
  std::thread t([&] {
    began = fooStreamBeginCapture(s, mode);
    begun_p.set_value();
    done.wait();
    fooGraph_t g = nullptr;
    ended = fooStreamEndCapture(s, &g);
    if (g) fooGraphDestroy(g);
  });
  begun.wait();
  std::exception_ptr failure;
  try {
    body();
  } catch (...) {
    failure = std::current_exception();
  }
  done_p.set_value();
  t.join();
  if (failure) std::rethrow_exception(failure);
  CHECK_OK(began);
  CHECK_OK(fooStreamDestroy(s));
  return ended;
}

}  // namespace

TEST(captured_chain_replays_with_its_values) {
  fooStream_t s = new_stream();
  int x = 1;
  unsigned char* d;
  unsigned char* h;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&d), 16));
  CHECK_OK(fooMallocHost(reinterpret_cast<void**>(&h), 16));
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFunc(s, add_one, &x));
  CHECK_OK(fooLaunchHostFunc(s, twice, &x));
  CHECK_OK(fooLaunchKernel(s, add_one, &x, "add_one"));
  CHECK_OK(fooMemsetAsync(d, 7, 16, s));
  CHECK_OK(fooLaunchHostFunc(s, add_one, d));  // the simulated device's memory is the host's
  CHECK_OK(fooMemcpyAsync(h, d, 16, fooMemcpyDeviceToHost, s));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  CHECK(x == 1);  // recorded, not run
  size_t n;
  CHECK_OK(fooGraphGetNodeCount(g, &n));
  CHECK(n == 6);
  fooGraphExec_t exec = instantiate(g);
  int expected = 1;
  for (int replay = 0; replay < 3; ++replay) {
    std::memset(h, 0, 16);
    CHECK_OK(fooGraphLaunch(exec, s));
    CHECK_OK(fooStreamSynchronize(s));
    expected = (expected + 1) * 2 + 1;
    CHECK(x == expected);
    CHECK(h[0] == 8 && h[1] == 7 && h[15] == 7);
  }
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooFree(d));
  CHECK_OK(fooFreeHost(h));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(replay_is_asynchronous) {
  fooStream_t s = new_stream();
  int x = 0;
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFunc(s, sleep_for_ms, &k200ms));
  CHECK_OK(fooLaunchHostFunc(s, add_one, &x));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  fooGraphExec_t exec = instantiate(g);
  auto t0 = Clock::now();
  CHECK_OK(fooGraphLaunch(exec, s));
  CHECK(harness::ms_since(t0) < 100);  // the host does not wait for the replay
  CHECK_ERR(fooStreamQuery(s), fooErrorNotReady);
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(harness::ms_since(t0) >= 199);
  CHECK(x == 1);
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(fork_and_join_across_streams_replays_branches_concurrently) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  fooEvent_t fork, join;
  CHECK_OK(fooEventCreate(&fork));
  CHECK_OK(fooEventCreate(&join));
  Log log;
  Entry first{&log, 1}, left{&log, 2}, right{&log, 3}, last{&log, 4};
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFunc(s1, append, &first));
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));  // s2 joins the capture
  unsigned long long id1, id2;
  CHECK(status_of(s1, &id1) == fooStreamCaptureStatusActive);
  CHECK(status_of(s2, &id2) == fooStreamCaptureStatusActive);
  CHECK(id1 == id2 && id1 != 0);
  CHECK_OK(fooLaunchHostFunc(s1, sleep_for_ms, &k200ms));
  CHECK_OK(fooLaunchHostFunc(s1, append, &left));
  CHECK_OK(fooLaunchHostFunc(s2, sleep_for_ms, &k200ms));
  CHECK_OK(fooLaunchHostFunc(s2, append, &right));
  CHECK_OK(fooEventRecord(join, s2));
  CHECK_OK(fooStreamWaitEvent(s1, join, 0));  // s2 joined back
  CHECK_OK(fooLaunchHostFunc(s1, append, &last));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  CHECK(status_of(s2) == fooStreamCaptureStatusNone);
  CHECK(log.get().empty());
  fooGraphExec_t exec = instantiate(g);
  for (int replay = 0; replay < 2; ++replay) {
    auto t0 = Clock::now();
    CHECK_OK(fooGraphLaunch(exec, s1));
    CHECK_OK(fooStreamSynchronize(s1));  // covers the whole replay, branches included
    double ms = harness::ms_since(t0);
    CHECK(ms >= 199);
    CHECK(ms < 340);  // one after the other would be 400
    std::vector<int> v = log.get();
    CHECK(v.size() == 4);
    CHECK(v[0] == 1 && v[3] == 4);
    CHECK((v[1] == 2 && v[2] == 3) || (v[1] == 3 && v[2] == 2));
    log.values.clear();
  }
  // The forked stream is an ordinary stream again.
  check_back_to_normal(s2);
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooEventDestroy(join));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

TEST(an_unjoined_fork_fails_the_capture) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  fooEvent_t fork;
  CHECK_OK(fooEventCreate(&fork));
  int x = 0;
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));
  CHECK_OK(fooLaunchHostFunc(s2, add_one, &x));
  fooGraph_t g;
  // Only the stream the capture began on can end it.
  CHECK_ERR(fooStreamEndCapture(s2, &g), fooErrorStreamCaptureUnmatched);
  CHECK_DETAIL_HAS("only joined");
  CHECK_ERR(fooStreamEndCapture(s1, &g), fooErrorStreamCaptureUnjoined);
  CHECK_DETAIL_HAS("not joined back");
  CHECK(g == nullptr);
  CHECK(std::string(fooGetErrorString(fooErrorStreamCaptureUnjoined)).find("joined") != std::string::npos);
  check_back_to_normal(s1);
  check_back_to_normal(s2);
  CHECK(x == 0);
  // The event recorded in the ended capture no longer stands for captured
  // work: queries and waits treat it as outside any capture.
  CHECK_OK(fooEventQuery(fork));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

TEST(capture_status_and_ids) {
  fooStream_t s = new_stream();
  unsigned long long id = 99;
  CHECK(status_of(s, &id) == fooStreamCaptureStatusNone);
  CHECK(id == 0);
  fooStreamCaptureStatus st;
  CHECK_OK(fooStreamIsCapturing(s, &st));
  CHECK(st == fooStreamCaptureStatusNone);
  fooGraph_t g;
  CHECK_ERR(fooStreamEndCapture(s, &g), fooErrorStreamCaptureUnmatched);
  CHECK_ERR(fooStreamBeginCapture(s, static_cast<fooStreamCaptureMode>(7)), fooErrorInvalidValue);
  unsigned long long ids[2];
  for (unsigned long long& cid : ids) {
    CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeThreadLocal));
    CHECK(status_of(s, &cid) == fooStreamCaptureStatusActive);
    CHECK(cid != 0);
    CHECK_OK(fooStreamIsCapturing(s, &st));
    CHECK(st == fooStreamCaptureStatusActive);
    CHECK_ERR(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal), fooErrorIllegalState);
    CHECK_OK(fooStreamEndCapture(s, &g));
    CHECK_OK(fooGraphDestroy(g));  // an empty graph
    CHECK(status_of(s) == fooStreamCaptureStatusNone);
  }
  CHECK(ids[0] != ids[1]);
  // The default stream can be captured too, and a capture on another stream
  // leaves it alone.
  fooStream_t other = new_stream();
  CHECK_OK(fooStreamBeginCapture(other, fooStreamCaptureModeRelaxed));
  CHECK(status_of(nullptr) == fooStreamCaptureStatusNone);
  CHECK_OK(fooStreamBeginCapture(nullptr, fooStreamCaptureModeRelaxed));
  unsigned long long a, b;
  status_of(nullptr, &a);
  status_of(other, &b);
  CHECK(a != b);
  CHECK_OK(fooStreamEndCapture(nullptr, &g));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamEndCapture(other, &g));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(other));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(ending_a_capture_from_another_thread) {
  fooStream_t s = new_stream();
  fooGraph_t g = nullptr;
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  fooError_t e = fooSuccess;
  std::thread([&] { e = fooStreamEndCapture(s, &g); }).join();
  CHECK(e == fooErrorStreamCaptureWrongThread);
  CHECK(status_of(s) == fooStreamCaptureStatusActive);  // the capture goes on
  CHECK_OK(fooStreamEndCapture(s, &g));
  CHECK_OK(fooGraphDestroy(g));
  // A relaxed capture may be ended by any thread.
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeRelaxed));
  std::thread([&] { e = fooStreamEndCapture(s, &g); }).join();
  CHECK(e == fooSuccess);
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s));
}

// What conflicts with a capture by its nature fails in every mode.
TEST(operations_on_captured_work_fail_in_every_mode) {
  using Op = std::function<fooError_t(fooStream_t, fooEvent_t)>;
  static char pageable[64];
  unsigned char* d;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&d), sizeof(pageable)));
  const std::vector<std::pair<const char*, Op>> ops = {
      {"fooStreamSynchronize", [](fooStream_t s, fooEvent_t) { return fooStreamSynchronize(s); }},
      {"fooStreamQuery", [](fooStream_t s, fooEvent_t) { return fooStreamQuery(s); }},
      {"fooDeviceSynchronize", [](fooStream_t, fooEvent_t) { return fooDeviceSynchronize(); }},
      {"fooEventQuery", [](fooStream_t, fooEvent_t e) { return fooEventQuery(e); }},
      {"fooEventSynchronize", [](fooStream_t, fooEvent_t e) { return fooEventSynchronize(e); }},
      {"blocking copy",
       [d](fooStream_t s, fooEvent_t) { return fooMemcpyAsync(pageable, d, sizeof(pageable), fooMemcpyDefault, s); }},
      {"fooStreamDestroy", [](fooStream_t s, fooEvent_t) { return fooStreamDestroy(s); }},
  };
  for (fooStreamCaptureMode mode : kModes) {
    for (const auto& op : ops) {
      fooStream_t s = new_stream();
      fooEvent_t e;
      CHECK_OK(fooEventCreate(&e));
      int x = 0;
      CHECK_OK(fooStreamBeginCapture(s, mode));
      CHECK_OK(fooLaunchHostFunc(s, add_one, &x));
      CHECK_OK(fooEventRecord(e, s));
      fooError_t got = op.second(s, e);
      if (got != fooErrorStreamCaptureUnsupported) {
        harness::fail_case(__FILE__, __LINE__,
                           std::string(op.first) + " in mode " + std::to_string(mode) + " returned " +
                               fooGetErrorName(got));
      }
      CHECK_DETAIL_HAS("capture");
      check_invalidated_end(s);
      CHECK(x == 0);
      CHECK_OK(fooEventDestroy(e));
      CHECK_OK(fooStreamDestroy(s));
    }
  }
  CHECK_OK(fooFree(d));
}

TEST(a_capturing_stream_cannot_wait_on_outside_work) {
  fooStream_t s = new_stream(), t = new_stream();
  fooEvent_t outside, never;
  CHECK_OK(fooEventCreate(&outside));
  CHECK_OK(fooEventCreate(&never));
  CHECK_OK(fooEventRecord(outside, t));
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  CHECK_OK(fooStreamWaitEvent(s, never, 0));  // never recorded: no dependency at all
  CHECK_ERR(fooStreamWaitEvent(s, outside, 0), fooErrorStreamCaptureIsolation);
  CHECK_DETAIL_HAS("outside the capture");
  check_invalidated_end(s);
  // Two captures cannot be merged either.
  fooEvent_t e1;
  CHECK_OK(fooEventCreate(&e1));
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  CHECK_OK(fooStreamBeginCapture(t, fooStreamCaptureModeGlobal));
  CHECK_OK(fooEventRecord(e1, s));
  CHECK_ERR(fooStreamWaitEvent(t, e1, 0), fooErrorStreamCaptureIsolation);
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  CHECK_OK(fooGraphDestroy(g));
  check_invalidated_end(t);
  CHECK_OK(fooEventDestroy(e1));
  CHECK_OK(fooEventDestroy(outside));
  CHECK_OK(fooEventDestroy(never));
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooStreamDestroy(t));
}

// Potentially unsafe calls by the capturing thread: forbidden unless the
// capture is relaxed (or the thread is in relaxed mode).
TEST(unsafe_calls_by_the_capturing_thread_depend_on_the_mode) {
  using Op = std::function<fooError_t()>;
  fooStream_t other = new_stream();
  fooEvent_t outside;
  CHECK_OK(fooEventCreate(&outside));
  CHECK_OK(fooEventRecord(outside, other));
  unsigned char* d;
  unsigned char h[8] = {};
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&d), sizeof(h)));
  const std::vector<std::pair<const char*, Op>> ops = {
      {"fooMalloc",
       [] {
         void* p = nullptr;
         fooError_t e = fooMalloc(&p, 256);
         if (p) fooFree(p);
         return e;
       }},
      {"fooMemcpy", [&] { return fooMemcpy(d, h, sizeof(h), fooMemcpyHostToDevice); }},
      {"fooMemset", [&] { return fooMemset(d, 0, sizeof(h)); }},
      {"fooStreamSynchronize of another stream", [&] { return fooStreamSynchronize(other); }},
      {"fooStreamQuery of another stream", [&] { return fooStreamQuery(other); }},
      {"fooEventQuery of an event outside the capture", [&] { return fooEventQuery(outside); }},
      {"fooEventSynchronize of an event outside the capture", [&] { return fooEventSynchronize(outside); }},
      {"pageable fooMemcpyAsync on another stream",
       [&] { return fooMemcpyAsync(h, d, sizeof(h), fooMemcpyDeviceToHost, other); }},
      {"fooMallocHost",
       [] {
         void* p = nullptr;
         fooError_t e = fooMallocHost(&p, 256);
         if (p) fooFreeHost(p);
         return e;
       }},
  };
  for (fooStreamCaptureMode mode : kModes) {
    for (const auto& op : ops) {
      fooStream_t s = new_stream();
      CHECK_OK(fooStreamBeginCapture(s, mode));
      fooError_t got = op.second();
      fooError_t want = mode == fooStreamCaptureModeRelaxed ? fooSuccess : fooErrorStreamCaptureUnsupported;
      if (got != want) {
        harness::fail_case(__FILE__, __LINE__,
                           std::string(op.first) + " in mode " + std::to_string(mode) + " returned " +
                               fooGetErrorName(got));
      }
      if (want == fooSuccess) {
        fooGraph_t g;
        CHECK_OK(fooStreamEndCapture(s, &g));
        CHECK_OK(fooGraphDestroy(g));
      } else {
        CHECK_DETAIL_HAS("fooThreadExchangeStreamCaptureMode");
        check_invalidated_end(s);
      }
      CHECK_OK(fooStreamDestroy(s));
    }
  }
  // A thread in relaxed mode may make them during its own global capture:
  // what an allocator does to grow a graph's private pool.
  fooStream_t s = new_stream();
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  fooStreamCaptureMode mode = fooStreamCaptureModeRelaxed;
  CHECK_OK(fooThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == fooStreamCaptureModeGlobal);
  void* p;
  CHECK_OK(fooMalloc(&p, 256));
  CHECK_OK(fooThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == fooStreamCaptureModeRelaxed);
  CHECK(status_of(s) == fooStreamCaptureStatusActive);
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooFree(p));
  CHECK_OK(fooFree(d));
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooStreamDestroy(other));
  CHECK_OK(fooEventDestroy(outside));
}

// Another thread's capture forbids this thread's unsafe calls only when it
// is global (and this thread is in global mode).
TEST(unsafe_calls_by_other_threads_depend_on_the_mode) {
  for (fooStreamCaptureMode mode : kModes) {
    bool forbidden = mode == fooStreamCaptureModeGlobal;
    fooError_t ended = with_capture_on_other_thread(mode, [&] {
      void* p = nullptr;
      fooError_t e = fooMalloc(&p, 256);
      CHECK(e == (forbidden ? fooErrorStreamCaptureUnsupported : fooSuccess));
      if (forbidden) CHECK_DETAIL_HAS("another thread's global capture");
      if (p) CHECK_OK(fooFree(p));
    });
    CHECK(ended == (forbidden ? fooErrorStreamCaptureInvalidated : fooSuccess));
    // Synchronizing the device would wait for the capturing stream: never.
    ended = with_capture_on_other_thread(mode, [] {
      CHECK_ERR(fooDeviceSynchronize(), fooErrorStreamCaptureUnsupported);
      CHECK_DETAIL_HAS("capturing stream");
    });
    CHECK(ended == fooErrorStreamCaptureInvalidated);
  }
  // In thread-local mode, this thread ignores other threads' captures.
  fooError_t ended = with_capture_on_other_thread(fooStreamCaptureModeGlobal, [] {
    fooStreamCaptureMode mode = fooStreamCaptureModeThreadLocal;
    CHECK_OK(fooThreadExchangeStreamCaptureMode(&mode));
    void* p = nullptr;
    fooError_t e = fooMalloc(&p, 256);
    if (p) fooFree(p);
    CHECK_OK(fooThreadExchangeStreamCaptureMode(&mode));
    CHECK_OK(e);
  });
  CHECK_OK(ended);
}

TEST(a_graph_launches_on_any_stream_of_its_device_in_order) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  Log log;
  Entry before{&log, 1}, inside{&log, 2}, after{&log, 3};
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFunc(s1, append, &inside));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  fooGraphExec_t exec = instantiate(g);
  // A graph may be destroyed once instantiated.
  CHECK_OK(fooGraphDestroy(g));
  for (fooStream_t s : {s2, static_cast<fooStream_t>(nullptr)}) {
    CHECK_OK(fooLaunchHostFunc(s, sleep_for_ms, &k100ms));
    CHECK_OK(fooLaunchHostFunc(s, append, &before));
    CHECK_OK(fooGraphLaunch(exec, s));
    CHECK_OK(fooLaunchHostFunc(s, append, &after));
    CHECK_OK(fooStreamSynchronize(s));
    CHECK((log.get() == std::vector<int>{1, 2, 3}));
    log.values.clear();
  }
  // Not on another device's stream.
  CHECK_OK(fooSetDevice(1));
  fooStream_t s3 = new_stream();
  CHECK_ERR(fooGraphLaunch(exec, s3), fooErrorInvalidValue);
  CHECK_DETAIL_HAS("foo device 0");
  CHECK_OK(fooStreamDestroy(s3));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

TEST(replays_of_one_executable_graph_run_one_after_another) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFunc(s1, sleep_for_ms, &k100ms));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  fooGraphExec_t exec = instantiate(g);
  auto t0 = Clock::now();
  CHECK_OK(fooGraphLaunch(exec, s1));
  CHECK_OK(fooGraphLaunch(exec, s2));
  CHECK_OK(fooStreamSynchronize(s2));
  CHECK(harness::ms_since(t0) >= 199);
  CHECK_OK(fooStreamSynchronize(s1));
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

TEST(destroying_while_a_replay_is_queued_is_safe) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  fooEvent_t fork, join;
  CHECK_OK(fooEventCreate(&fork));
  CHECK_OK(fooEventCreate(&join));
  unsigned char* d;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&d), 64));
  int x = 0;
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));
  CHECK_OK(fooMemsetAsync(d, 5, 64, s2));  // a closure node, owned by the graph
  CHECK_OK(fooEventRecord(join, s2));
  CHECK_OK(fooLaunchHostFunc(s1, add_one, &x));
  CHECK_OK(fooStreamWaitEvent(s1, join, 0));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  fooGraphExec_t exec = instantiate(g);
  CHECK_OK(harness::launch_sleep(s1, 100));
  CHECK_OK(fooGraphLaunch(exec, s1));
  CHECK_OK(fooGraphLaunch(exec, s1));
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK(x == 0);
  CHECK_OK(fooStreamSynchronize(s1));
  CHECK(x == 2);
  CHECK(d[0] == 5 && d[63] == 5);
  // Stale handles are errors, not crashes.
  CHECK_ERR(fooGraphLaunch(exec, s1), fooErrorInvalidResourceHandle);
  CHECK_ERR(fooGraphExecDestroy(exec), fooErrorInvalidResourceHandle);
  CHECK_ERR(fooGraphDestroy(g), fooErrorInvalidResourceHandle);
  fooGraphExec_t x2;
  CHECK_ERR(fooGraphInstantiate(&x2, g, 0), fooErrorInvalidResourceHandle);
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooFree(d));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooEventDestroy(join));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

namespace {
void fail_kernel(void*) { fooKernelReportError("replayed kernel failed"); }
}  // namespace

TEST(a_failure_inside_a_replay_surfaces_on_the_launching_stream) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  fooEvent_t fork, join;
  CHECK_OK(fooEventCreate(&fork));
  CHECK_OK(fooEventCreate(&join));
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));
  CHECK_OK(fooLaunchHostFunc(s2, fail_kernel, nullptr));  // on a forked branch
  CHECK_OK(fooEventRecord(join, s2));
  CHECK_OK(fooStreamWaitEvent(s1, join, 0));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  fooGraphExec_t exec = instantiate(g);
  CHECK_OK(fooGraphLaunch(exec, s1));
  CHECK_ERR(fooStreamSynchronize(s1), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("replayed kernel failed");
  CHECK_OK(fooStreamSynchronize(s1));  // reported once
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooEventDestroy(join));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

TEST(debug_dump_names_nodes_streams_and_dependencies) {
  fooStream_t s1 = new_stream(), s2 = new_stream();
  fooEvent_t fork, join;
  CHECK_OK(fooEventCreate(&fork));
  CHECK_OK(fooEventCreate(&join));
  unsigned char* d;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&d), 64));
  int x = 0;
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchKernel(s1, add_one, &x, "first_kernel"));
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));
  CHECK_OK(fooMemsetAsync(d, 1, 64, s2));
  CHECK_OK(fooEventRecord(join, s2));
  CHECK_OK(fooStreamWaitEvent(s1, join, 0));
  CHECK_OK(fooLaunchKernel(s1, add_one, &x, "last_kernel"));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  std::string path = "/tmp/foo_sim_graph_dump_" + std::to_string(getpid()) + ".dot";
  CHECK_OK(fooGraphDebugDotPrint(g, path.c_str(), 0));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  std::string dot = text.str();
  for (const char* want : {"digraph", "3 nodes, 2 streams", "0: kernel first_kernel", "1: memset Memset (64 bytes)",
                           "2: kernel last_kernel", "n0 -> n1 [style=dashed", "n1 -> n2 [style=dashed",
                           "n0 -> n2;", "stream 1"}) {
    if (dot.find(want) == std::string::npos) harness::fail_case(__FILE__, __LINE__, "dump lacks '" + std::string(want) + "':\n" + dot);
  }
  CHECK_ERR(fooGraphDebugDotPrint(g, "/nonexistent-dir/x.dot", 0), fooErrorInvalidValue);
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooFree(d));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooEventDestroy(join));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}

namespace {
void add_one_atomic(void* p) { ++*static_cast<std::atomic<int>*>(p); }
void fail_then_continue(void*) { fooKernelReportError("middle of the chain failed"); }
}  // namespace

TEST(a_failed_node_in_a_chain_leaves_the_rest_running_and_is_reported_once) {
  fooStream_t s = new_stream();
  int x = 0;
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFunc(s, add_one, &x));
  CHECK_OK(fooLaunchHostFunc(s, fail_then_continue, nullptr));
  CHECK_OK(fooLaunchHostFunc(s, add_one, &x));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  fooGraphExec_t exec = instantiate(g);
  for (int replay = 1; replay <= 2; ++replay) {
    CHECK_OK(fooGraphLaunch(exec, s));
    CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);
    CHECK_DETAIL_HAS("middle of the chain failed");
    CHECK_OK(fooStreamSynchronize(s));
    CHECK(x == 2 * replay);
  }
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(the_profiler_sees_each_replayed_node_by_its_name) {
  fooStream_t s = new_stream();
  int x = 0;
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  for (int i = 0; i < 5; ++i) CHECK_OK(fooLaunchKernel(s, add_one, &x, "graph_add_one"));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  fooGraphExec_t exec = instantiate(g);
  CHECK_OK(fooProfilerStart());
  CHECK_OK(fooGraphLaunch(exec, s));
  CHECK_OK(fooGraphLaunch(exec, s));
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooProfilerStop());
  int named = 0, others = 0;
  struct Counts {
    int* named;
    int* others;
  } counts{&named, &others};
  CHECK_OK(fooProfilerFlush(
      [](const fooActivity* a, void* p) {
        auto* c = static_cast<Counts*>(p);
        ++*(std::strcmp(a->name, "graph_add_one") == 0 ? c->named : c->others);
      },
      &counts));
  CHECK(named == 10);
  CHECK(others == 0);
  CHECK(x == 10);
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s));
}

// Many replays of a forked graph, launched from two threads on several
// streams at once, while the graphs are destroyed under them.
TEST(concurrent_replays_from_two_threads) {
  constexpr int kReplays = 200;
  std::atomic<int> counts[2] = {{0}, {0}};
  fooGraphExec_t execs[2];
  fooStream_t streams[2][2];
  fooEvent_t events[2][2];
  for (int t = 0; t < 2; ++t) {
    streams[t][0] = new_stream();
    streams[t][1] = new_stream();
    CHECK_OK(fooEventCreate(&events[t][0]));
    CHECK_OK(fooEventCreate(&events[t][1]));
    fooStream_t a = streams[t][0], b = streams[t][1];
    CHECK_OK(fooStreamBeginCapture(a, fooStreamCaptureModeThreadLocal));
    CHECK_OK(fooLaunchHostFunc(a, add_one_atomic, &counts[t]));
    CHECK_OK(fooEventRecord(events[t][0], a));
    CHECK_OK(fooStreamWaitEvent(b, events[t][0], 0));
    CHECK_OK(fooLaunchHostFunc(b, add_one_atomic, &counts[t]));
    CHECK_OK(fooLaunchHostFunc(a, add_one_atomic, &counts[t]));
    CHECK_OK(fooEventRecord(events[t][1], b));
    CHECK_OK(fooStreamWaitEvent(a, events[t][1], 0));
    fooGraph_t g;
    CHECK_OK(fooStreamEndCapture(a, &g));
    execs[t] = instantiate(g);
    CHECK_OK(fooGraphDestroy(g));
  }
  fooError_t results[2] = {fooSuccess, fooSuccess};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kReplays && results[t] == fooSuccess; ++i) {
        results[t] = fooGraphLaunch(execs[t], streams[t][i % 2]);
      }
      if (results[t] == fooSuccess) results[t] = fooGraphExecDestroy(execs[t]);
    });
  }
  for (auto& th : threads) th.join();
  CHECK_OK(results[0]);
  CHECK_OK(results[1]);
  CHECK_OK(fooDeviceSynchronize());
  CHECK(counts[0] == 3 * kReplays);
  CHECK(counts[1] == 3 * kReplays);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 2; ++i) {
      CHECK_OK(fooEventDestroy(events[t][i]));
      CHECK_OK(fooStreamDestroy(streams[t][i]));
    }
  }
}

namespace {
// User data that counts its runs and its release, and records an event on
// release, so a release that ran with foo_sim's locks held would deadlock.
struct Owned {
  std::atomic<int>* runs;
  std::atomic<int>* releases;
  fooEvent_t event;
  fooStream_t stream;
};
void owned_run(void* p) { ++*static_cast<Owned*>(p)->runs; }
void owned_release(void* p) {
  auto* o = static_cast<Owned*>(p);
  if (o->event) fooEventRecord(o->event, o->stream);
  ++*o->releases;
  delete o;
}
}  // namespace

TEST(owned_launches_release_their_data_once_it_is_no_longer_needed) {
  fooStream_t s1 = new_stream(), s2 = new_stream(), side = new_stream();
  fooEvent_t ev, fork, join;
  CHECK_OK(fooEventCreate(&ev));
  CHECK_OK(fooEventCreate(&fork));
  CHECK_OK(fooEventCreate(&join));
  std::atomic<int> runs{0}, releases{0};
  auto owned = [&] { return new Owned{&runs, &releases, ev, side}; };
  // Not captured: released right after it ran.
  CHECK_OK(fooLaunchHostFuncOwned(s1, owned_run, owned(), owned_release, "owned_kernel"));
  CHECK_OK(fooStreamSynchronize(s1));
  CHECK(runs == 1);
  for (int i = 0; i < 1000 && releases != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(releases == 1);
  // An error return releases before returning.
  fooStream_t dead = new_stream();
  CHECK_OK(fooStreamDestroy(dead));
  CHECK_ERR(fooLaunchHostFuncOwned(dead, owned_run, owned(), owned_release, nullptr), fooErrorInvalidResourceHandle);
  CHECK(releases == 2);
  // Captured (on a forked branch too): run by every replay, released once
  // the graph, the executable graph and the queued replays are gone.
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFuncOwned(s1, owned_run, owned(), owned_release, "owned_kernel"));
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));
  CHECK_OK(fooLaunchHostFuncOwned(s2, owned_run, owned(), owned_release, "owned_kernel"));
  CHECK_OK(fooEventRecord(join, s2));
  CHECK_OK(fooStreamWaitEvent(s1, join, 0));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  fooGraphExec_t exec = instantiate(g);
  CHECK_OK(fooGraphDestroy(g));
  CHECK(runs == 1 && releases == 2);
  CHECK_OK(harness::launch_sleep(s1, 100));
  for (int i = 0; i < 3; ++i) CHECK_OK(fooGraphLaunch(exec, s1));
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK(releases == 2);  // the replays still need it
  CHECK_OK(fooStreamSynchronize(s1));
  CHECK(runs == 1 + 3 * 2);
  for (int i = 0; i < 1000 && releases != 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(releases == 4);
  // A capture that fails releases what it captured, and an invalidated one
  // what is launched into it.
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  CHECK_OK(fooLaunchHostFuncOwned(s1, owned_run, owned(), owned_release, nullptr));
  CHECK_ERR(fooStreamQuery(s1), fooErrorStreamCaptureUnsupported);
  CHECK_ERR(fooLaunchHostFuncOwned(s1, owned_run, owned(), owned_release, nullptr), fooErrorStreamCaptureInvalidated);
  CHECK(releases == 5);
  CHECK_ERR(fooStreamEndCapture(s1, &g), fooErrorStreamCaptureInvalidated);
  CHECK(releases == 6);
  CHECK(runs == 7);
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(fooEventDestroy(ev));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooEventDestroy(join));
  for (fooStream_t s : {s1, s2, side}) CHECK_OK(fooStreamDestroy(s));
}

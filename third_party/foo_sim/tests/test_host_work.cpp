// Host work (foo_runtime.h, fooSetHostWorkHook): a host thread that waits
// for queued work runs it itself when an idle executor would take it, and
// the work cannot tell: it sees an executor's foo_sim state, fails, is
// traced and is delayed as on an executor, and the executor count and
// priorities still decide what runs at once.
//
// Where a case needs the host to run the work for certain, it runs with
// FOO_SIM_LAUNCH_BLOCKING=1 (CMakeLists.txt): each launch waits for its work
// on an idle stream, which the waiting host claims before any executor sees
// it. Other cases wait as a program does and repeat until the host took the
// work (an executor may win the race to it now and then).
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#include "foo_sim/foo_graph.h"
#include "foo_sim/foo_profiler.h"
#include "foo_sim/foo_race.h"
#include "harness.h"

namespace {

// How many attempts a case makes before it concludes that the host never
// takes the work. The host wins almost every attempt: each starts once the
// executors block (let_executors_block), so that the launch has to wake one
// while the host goes straight on to wait. On a loaded machine (the test
// suite's other processes on every core) the woken executor can win
// hundreds of attempts in a row; an attempt takes a few milliseconds, and a
// case stops at its first win.
constexpr int kAttempts = 1000;

// Longer than an idle executor polls for the next launch (kSpin, 50 us)
// before it blocks.
void let_executors_block() { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }

bool on_this_thread(std::thread::id id) { return id == std::this_thread::get_id(); }

fooStream_t default_stream(int device) {
  fooStream_t s;
  CHECK_OK(fooDeviceGetDefaultStream(device, &s));
  return s;
}

}  // namespace

// ---- FOO_SIM_LAUNCH_BLOCKING=0 (the default)

TEST(a_blocking_copy_on_an_idle_stream_runs_on_the_waiting_host) {
  void* dev;
  CHECK_OK(fooMalloc(&dev, 4096));
  std::vector<char> in(4096, 7), out(4096, 0);
  unsigned long long before = fooHostWorkCount();
  CHECK_OK(fooMemcpy(dev, in.data(), in.size(), fooMemcpyHostToDevice));
  CHECK_OK(fooMemcpy(out.data(), dev, out.size(), fooMemcpyDeviceToHost));
  CHECK(fooHostWorkCount() == before + 2);
  CHECK(out == in);
  CHECK_OK(fooFree(dev));
}

TEST(a_synchronizing_host_runs_the_streams_work_in_order) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  bool taken = false;
  for (int attempt = 0; attempt < kAttempts && !taken; ++attempt) {
    let_executors_block();
    std::vector<int> order;
    std::thread::id first, second;
    CHECK_OK(harness::launch(s, [&] { order.push_back(1), first = std::this_thread::get_id(); }));
    CHECK_OK(harness::launch(s, [&] { order.push_back(2), second = std::this_thread::get_id(); }));
    CHECK_OK(fooStreamSynchronize(s));
    CHECK((order == std::vector<int>{1, 2}));
    taken = on_this_thread(first) && on_this_thread(second);
  }
  CHECK(taken);
  CHECK_OK(fooStreamDestroy(s));
}

TEST(a_host_waiting_for_an_event_runs_the_work_before_its_record_only) {
  fooStream_t s;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooEventCreate(&e));
  bool taken = false;
  for (int attempt = 0; attempt < kAttempts && !taken; ++attempt) {
    let_executors_block();
    std::thread::id before_record;
    std::atomic<bool> release{false};
    CHECK_OK(harness::launch(s, [&] { before_record = std::this_thread::get_id(); }));
    CHECK_OK(fooEventRecord(e, s));
    // Queued after the record: not what the host waits for. It blocks until
    // released, so the host would hang here if it ran it.
    CHECK_OK(harness::launch(s, [&] {
      while (!release) std::this_thread::yield();
    }));
    CHECK_OK(fooEventSynchronize(e));
    taken = on_this_thread(before_record);
    release = true;
    CHECK_OK(fooStreamSynchronize(s));
  }
  CHECK(taken);
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(s));
}

// The host follows a wait to the stream that makes the awaited record, on
// another device here, and runs that stream's work first.
TEST(a_host_runs_the_work_an_awaited_stream_waits_for) {
  fooStream_t a, b;
  fooEvent_t e;
  CHECK_OK(fooStreamCreate(&a));
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&b));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooEventCreate(&e));
  bool taken = false;
  for (int attempt = 0; attempt < kAttempts && !taken; ++attempt) {
    let_executors_block();
    std::vector<int> order;
    std::thread::id ran_a, ran_b;
    CHECK_OK(harness::launch(a, [&] { order.push_back(1), ran_a = std::this_thread::get_id(); }));
    CHECK_OK(fooEventRecord(e, a));
    CHECK_OK(fooStreamWaitEvent(b, e, 0));
    CHECK_OK(harness::launch(b, [&] {
      int device = -1;
      fooGetDevice(&device);
      order.push_back(device == 1 ? 2 : -2);
      ran_b = std::this_thread::get_id();
    }));
    CHECK_OK(fooStreamSynchronize(b));
    CHECK((order == std::vector<int>{1, 2}));
    taken = on_this_thread(ran_a) && on_this_thread(ran_b);
  }
  CHECK(taken);
  CHECK_OK(fooEventDestroy(e));
  CHECK_OK(fooStreamDestroy(a));
  CHECK_OK(fooStreamDestroy(b));
}

TEST(a_failure_in_work_the_host_ran_is_reported_once_by_the_wait) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  bool taken = false;
  for (int attempt = 0; attempt < kAttempts && !taken; ++attempt) {
    let_executors_block();
    std::thread::id ran;
    CHECK_OK(harness::launch(s, [&] {
      ran = std::this_thread::get_id();
      fooKernelReportError("the kernel's own failure");
    }));
    CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);
    CHECK_DETAIL_HAS("the kernel's own failure");
    CHECK_OK(fooStreamSynchronize(s));
    taken = on_this_thread(ran);
  }
  CHECK(taken);
  CHECK_OK(fooStreamDestroy(s));
}

namespace {
// A captured kernel runs once per replay, on the same data (so not
// harness::launch's, which frees its closure after one run).
struct Node {
  int number;
  std::vector<int>* order;
  std::thread::id* ran;
};
void run_node(void* p) {
  auto* n = static_cast<Node*>(p);
  n->order->push_back(n->number);
  *n->ran = std::this_thread::get_id();
}
}  // namespace

TEST(a_graph_replay_runs_on_the_waiting_host) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  std::vector<int> order;
  std::thread::id ran;
  Node nodes[] = {{1, &order, &ran}, {2, &order, &ran}, {3, &order, &ran}};
  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  for (Node& n : nodes) CHECK_OK(fooLaunchHostFunc(s, &run_node, &n));
  fooGraph_t g;
  fooGraphExec_t x;
  CHECK_OK(fooStreamEndCapture(s, &g));
  CHECK_OK(fooGraphInstantiate(&x, g, 0));
  bool taken = false;
  for (int attempt = 0; attempt < kAttempts && !taken; ++attempt) {
    let_executors_block();
    order.clear();
    CHECK_OK(fooGraphLaunch(x, s));
    CHECK_OK(fooStreamSynchronize(s));
    CHECK((order == std::vector<int>{1, 2, 3}));
    taken = on_this_thread(ran);
  }
  CHECK(taken);
  CHECK_OK(fooGraphExecDestroy(x));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s));
}

// ---- FOO_SIM_DEVICE_EXECUTORS=1: the host never adds to the executors

// The one executor is busy: a blocking copy waits for it, though the host
// is idle and the copy's stream too.
TEST(a_host_does_not_run_work_while_the_executors_are_all_busy) {
  fooStream_t busy;
  CHECK_OK(fooStreamCreate(&busy));
  std::atomic<bool> started{false}, release{false}, released{false};
  CHECK_OK(harness::launch(busy, [&] {
    started = true;
    while (!release) std::this_thread::yield();
  }));
  CHECK_OK(harness::wait_by_polling(nullptr));  // the default stream is idle
  while (!started) std::this_thread::yield();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    released = true;
    release = true;
  });
  void* dev;
  CHECK_OK(fooMalloc(&dev, 64));
  char in[64] = {1};
  unsigned long long before = fooHostWorkCount();
  CHECK_OK(fooMemcpy(dev, in, sizeof(in), fooMemcpyHostToDevice));
  CHECK(released);                         // it waited for the executor
  CHECK(fooHostWorkCount() == before);     // which ran it
  releaser.join();
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooStreamDestroy(busy));
}

// While the one executor is busy, a low-priority stream's work (queued
// first) and a high-priority stream's wait; a host synchronizing the device
// takes neither, and the executor runs the high-priority work first.
TEST(a_synchronizing_host_keeps_the_priorities) {
  int least, greatest;
  CHECK_OK(fooDeviceGetStreamPriorityRange(&least, &greatest));
  fooStream_t blocker, low, high;
  CHECK_OK(fooStreamCreateWithPriority(&blocker, fooStreamDefault, least));
  CHECK_OK(fooStreamCreateWithPriority(&low, fooStreamDefault, least));
  CHECK_OK(fooStreamCreateWithPriority(&high, fooStreamDefault, greatest));
  std::atomic<bool> started{false}, release{false};
  CHECK_OK(harness::launch(blocker, [&] {
    started = true;
    while (!release) std::this_thread::yield();
  }));
  while (!started) std::this_thread::yield();
  std::mutex m;
  std::vector<std::string> order;
  CHECK_OK(harness::launch(low, [&] {
    std::lock_guard<std::mutex> g(m);
    order.push_back("low");
  }));
  CHECK_OK(harness::launch(high, [&] {
    std::lock_guard<std::mutex> g(m);
    order.push_back("high");
  }));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  unsigned long long before = fooHostWorkCount();
  CHECK_OK(fooDeviceSynchronize());
  releaser.join();
  CHECK((order == std::vector<std::string>{"high", "low"}));
  CHECK(fooHostWorkCount() == before);
  for (fooStream_t s : {blocker, low, high}) CHECK_OK(fooStreamDestroy(s));
}

// ---- FOO_SIM_LAUNCH_BLOCKING=1: every launch runs on the launching host

TEST(work_the_host_runs_sees_an_executors_state) {
  // The host's own state: another current device, a last error, a capture
  // mode, a correlation id, a declared access.
  void* dev;
  CHECK_OK(fooMalloc(&dev, 64));
  CHECK_OK(fooSetDevice(1));
  CHECK_ERR(fooSetDevice(99), fooErrorInvalidDevice);
  std::string detail = fooGetErrorDetail();
  fooStreamCaptureMode relaxed = fooStreamCaptureModeRelaxed;
  CHECK_OK(fooThreadExchangeStreamCaptureMode(&relaxed));
  fooProfilerSetCorrelationId(77);

  struct Seen {
    std::thread::id thread;
    int device = -1;
    fooError_t last_error = fooErrorIllegalState;
    int on_executor = 0;
    fooError_t blocking_call = fooSuccess;
    fooStreamCaptureMode capture_mode = fooStreamCaptureModeRelaxed;
  } seen;
  unsigned long long before = fooHostWorkCount();
  CHECK_OK(harness::launch(default_stream(0), [&seen] {
    seen.thread = std::this_thread::get_id();
    fooGetDevice(&seen.device);
    seen.last_error = fooPeekAtLastError();
    seen.on_executor = fooRaceOnExecutorThread();
    seen.blocking_call = fooStreamSynchronize(nullptr);
    fooStreamCaptureMode mode = fooStreamCaptureModeGlobal;
    fooThreadExchangeStreamCaptureMode(&mode);  // reads the thread's mode
    seen.capture_mode = mode;
    fooThreadExchangeStreamCaptureMode(&mode);
  }));
  CHECK(fooHostWorkCount() == before + 1);
  CHECK(on_this_thread(seen.thread));
  CHECK(seen.device == 0);  // the stream's, as an executor of device 0 has it
  CHECK(seen.last_error == fooSuccess);
  CHECK(seen.on_executor == 1);
  CHECK(seen.blocking_call == fooErrorNotPermitted);
  CHECK(seen.capture_mode == fooStreamCaptureModeGlobal);

  // The host's state is as it left it.
  int device = -1;
  CHECK_OK(fooGetDevice(&device));
  CHECK(device == 1);
  CHECK(fooPeekAtLastError() == fooErrorInvalidDevice);
  CHECK(detail == fooGetErrorDetail());
  CHECK(fooRaceOnExecutorThread() == 0);
  fooStreamCaptureMode mode = fooStreamCaptureModeGlobal;
  CHECK_OK(fooThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == fooStreamCaptureModeRelaxed);
  fooProfilerSetCorrelationId(0);
  (void)fooGetLastError();
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooFree(dev));
}

TEST(a_failure_in_work_the_host_ran_is_reported_by_the_blocking_launch) {
  CHECK_ERR(harness::launch(nullptr, [] { fooKernelReportError("failed on the host"); }), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("failed on the host");
  CHECK(fooPeekAtLastError() == fooErrorLaunchFailure);
  CHECK_OK(fooStreamSynchronize(nullptr));  // reported once
  CHECK_ERR(harness::launch(nullptr, [] { throw std::runtime_error("thrown on the host"); }), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("thrown on the host");
}

namespace {
std::atomic<int> g_begins{0}, g_ends{0}, g_asks{0};
std::atomic<bool> g_decline{false}, g_refuse{false};
thread_local bool t_in_host_work = false;

int bracket(fooHostWorkPhase phase, void* user_data) {
  CHECK(user_data == &g_begins);
  if (phase == fooHostWorkAsk) {
    ++g_asks;
    return g_refuse ? 1 : 0;
  }
  if (phase == fooHostWorkBegin) {
    if (g_decline) return 1;
    ++g_begins;
    t_in_host_work = true;
  } else {
    ++g_ends;
    t_in_host_work = false;
  }
  return 0;
}
}  // namespace

TEST(the_embeddings_hook_brackets_host_work_and_may_limit_or_decline_it) {
  CHECK_OK(fooSetHostWorkHook(&bracket, &g_begins));
  bool inside = false;
  std::thread::id ran;
  CHECK_OK(harness::launch(nullptr, [&] {
    inside = t_in_host_work;
    ran = std::this_thread::get_id();
  }));
  CHECK(inside && on_this_thread(ran));
  CHECK(g_begins == 1 && g_ends == 1);
  CHECK(!t_in_host_work);

  g_decline = true;
  unsigned long long before = fooHostWorkCount();
  CHECK_OK(harness::launch(nullptr, [&] { ran = std::this_thread::get_id(); }));
  CHECK(!on_this_thread(ran));  // an executor ran it
  CHECK(fooHostWorkCount() == before);
  CHECK(g_begins == 1 && g_ends == 1);
  g_decline = false;

  // Asked first, a hook that limits the host to serial work leaves other
  // kernels to the executors without beginning, and runs serial ones.
  g_refuse = true;
  int asks = g_asks;
  CHECK_OK(harness::launch(nullptr, [&] { ran = std::this_thread::get_id(); }));
  CHECK(!on_this_thread(ran));
  CHECK(fooHostWorkCount() == before);
  CHECK(g_asks > asks);
  CHECK(g_begins == 1 && g_ends == 1);
  static std::thread::id serial_ran;
  CHECK_OK(fooLaunchKernelEx(nullptr, [](void*) { serial_ran = std::this_thread::get_id(); }, nullptr, "serial",
                             fooKernelSerial));
  CHECK(on_this_thread(serial_ran));
  CHECK(fooHostWorkCount() == before + 1);
  CHECK(g_begins == 2 && g_ends == 2);
  CHECK_ERR(fooLaunchKernelEx(nullptr, [](void*) {}, nullptr, "bad", 0x8u), fooErrorInvalidValue);
  g_refuse = false;
  CHECK_OK(fooSetHostWorkHook(nullptr, nullptr));
}

TEST(work_the_host_runs_is_traced_on_its_device_and_stream) {
  fooStream_t s;
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooProfilerStart());
  fooProfilerSetCorrelationId(42);
  CHECK_OK(fooLaunchKernel(s, [](void*) {}, nullptr, "host_run_kernel"));
  fooProfilerSetCorrelationId(0);
  CHECK_OK(fooProfilerStop());
  std::vector<fooActivity> seen;
  CHECK_OK(fooProfilerFlush([](const fooActivity* a, void* out) {
    static_cast<std::vector<fooActivity>*>(out)->push_back(*a);
  }, &seen));
  CHECK(seen.size() == 1);
  CHECK(std::strcmp(seen[0].name, "host_run_kernel") == 0);
  CHECK(seen[0].device == 1 && seen[0].stream == s);
  CHECK(seen[0].correlationId == 42);
  CHECK(seen[0].launchThread == static_cast<int>(::syscall(SYS_gettid)));
  CHECK(seen[0].launchNs <= seen[0].startNs && seen[0].startNs <= seen[0].endNs);
  CHECK_OK(fooStreamDestroy(s));
}

// ---- FOO_SIM_LAUNCH_BLOCKING=1 FOO_SIM_LAUNCH_DELAY_US=100000

TEST(the_launch_delay_applies_to_work_the_host_runs) {
  auto launched = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point started;
  unsigned long long before = fooHostWorkCount();
  CHECK_OK(harness::launch(nullptr, [&started] { started = std::chrono::steady_clock::now(); }));
  CHECK(fooHostWorkCount() == before + 1);
  CHECK(started - launched >= std::chrono::milliseconds(100));
}

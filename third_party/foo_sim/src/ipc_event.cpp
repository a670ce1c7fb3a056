#include "ipc_event.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>

#include "error.h"
#include "ipc_segment.h"

namespace foo_sim::ipc {

namespace {

// In the shared file. Sequence numbers wrap; compared by their difference.
struct State {
  std::atomic<uint32_t> recorded;   // records made so far, by any process
  std::atomic<uint32_t> completed;  // the latest record whose work has run (a futex word)
  std::atomic<int32_t> recorder;    // pid of the process that made the latest record
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared atomics must be lock-free");
constexpr size_t kStateBytes = 64;

bool reached(uint32_t completed, uint32_t target) { return static_cast<int32_t>(completed - target) >= 0; }

bool process_alive(int32_t pid) { return pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH; }

}  // namespace

struct SharedEvent {
  State* state = nullptr;
  int fd = -1;
  SegmentName name;
  // The latest record this process made, and its local scheduler record:
  // a wait for it is an ordinary stream wait, which occupies no executor.
  std::atomic<uint32_t> local_seq{0};
  ~SharedEvent() {
    if (state != nullptr) destroy_segment(state, kStateBytes, fd);
  }
};

namespace {

std::mutex g_mutex;
std::unordered_map<fooEvent_t, std::shared_ptr<SharedEvent>> g_events;
// g_events.size(), read without the lock: ordinary events, every record,
// query and wait, pay one load when the process has no interprocess event.
std::atomic<size_t> g_event_count{0};

void add(fooEvent_t event, std::shared_ptr<SharedEvent> ev) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events[event] = std::move(ev);
  g_event_count.store(g_events.size(), std::memory_order_release);
}

// Waits until the record `target` has run, or its process is gone.
fooError_t wait_until(const std::shared_ptr<SharedEvent>& ev, uint32_t target, const char* what) {
  State* st = ev->state;
  for (;;) {
    uint32_t done = st->completed.load(std::memory_order_acquire);
    if (reached(done, target)) return fooSuccess;
    timespec timeout{0, 100 * 1000 * 1000};  // wakes to see whether the recorder still lives
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&st->completed), FUTEX_WAIT, done, &timeout, nullptr, 0);
    int32_t recorder = st->recorder.load(std::memory_order_acquire);
    if (!process_alive(recorder) && !reached(st->completed.load(std::memory_order_acquire), target)) {
      return fail(fooErrorLaunchFailure,
                  format("%s: the process that recorded the interprocess event (pid %d) exited before the recorded "
                         "work ran", what, recorder));
    }
  }
}

}  // namespace

std::shared_ptr<SharedEvent> shared_event(fooEvent_t event) {
  if (g_event_count.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_events.find(event);
  return it == g_events.end() ? nullptr : it->second;
}

fooError_t create_shared_event(Runtime* rt, unsigned flags, fooEvent_t* out) {
  if (!(flags & fooEventDisableTiming)) {
    return fail(fooErrorInvalidValue, "fooEventCreate: fooEventInterprocess needs fooEventDisableTiming");
  }
  auto ev = std::make_shared<SharedEvent>();
  void* base = nullptr;
  if (!create_segment(kStateBytes, &base, &ev->name)) {
    return fail(fooErrorMemoryAllocation, format("fooEventCreate: cannot create an interprocess event: %s",
                                                 std::strerror(errno)));
  }
  ev->state = new (base) State{};
  ev->fd = ev->name.fd;
  if (fooError_t e = rt->scheduler().create_event(rt->current_device(), flags & ~fooEventInterprocess, out)) return e;
  add(*out, std::move(ev));
  return fooSuccess;
}

fooError_t open_shared_event(Runtime* rt, const fooIpcEventHandle_t& handle, fooEvent_t* out) {
  WireHandle h;
  void* base = nullptr;
  int fd = -1;
  if (fooError_t e = open_handle(handle.reserved, HandleKind::Event, "fooIpcOpenEventHandle", &h, &base, &fd)) return e;
  auto ev = std::make_shared<SharedEvent>();
  ev->state = static_cast<State*>(base);
  ev->fd = fd;
  ev->name = h.name;
  if (fooError_t e = rt->scheduler().create_event(rt->current_device(), fooEventDisableTiming, out)) return e;
  add(*out, std::move(ev));
  return fooSuccess;
}

fooError_t shared_event_handle(fooEvent_t event, fooIpcEventHandle_t* handle) {
  auto ev = shared_event(event);
  if (!ev) {
    return fail(fooErrorInvalidResourceHandle,
                "fooIpcGetEventHandle: the event was not created with fooEventInterprocess");
  }
  encode(ev->name, HandleKind::Event, kStateBytes, handle->reserved);
  return fooSuccess;
}

void destroy_shared_event(fooEvent_t event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.erase(event);
  g_event_count.store(g_events.size(), std::memory_order_release);
}

fooError_t record(Runtime* rt, const std::shared_ptr<SharedEvent>& ev, fooEvent_t event, Stream* stream) {
  fooStreamCaptureStatus status = fooStreamCaptureStatusNone;
  if (fooError_t e = rt->scheduler().capture_info(stream, &status, nullptr)) return e;
  if (status != fooStreamCaptureStatusNone) {
    return fail(fooErrorStreamCaptureUnsupported, "fooEventRecord: an interprocess event cannot be recorded in a capture");
  }
  if (fooError_t e = rt->scheduler().record_event(event, stream)) return e;
  State* st = ev->state;
  uint32_t seq = st->recorded.fetch_add(1, std::memory_order_acq_rel) + 1;
  st->recorder.store(getpid(), std::memory_order_release);
  ev->local_seq.store(seq, std::memory_order_release);
  return rt->scheduler().launch(stream, [ev, seq] {
    State* s = ev->state;
    uint32_t cur = s->completed.load(std::memory_order_acquire);
    while (!reached(cur, seq) && !s->completed.compare_exchange_weak(cur, seq, std::memory_order_acq_rel)) {
    }
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s->completed), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }, /*serial=*/true);
}

fooError_t query(const std::shared_ptr<SharedEvent>& ev) {
  State* st = ev->state;
  uint32_t target = st->recorded.load(std::memory_order_acquire);
  return reached(st->completed.load(std::memory_order_acquire), target) ? fooSuccess : fooErrorNotReady;
}

fooError_t synchronize(const std::shared_ptr<SharedEvent>& ev) {
  return wait_until(ev, ev->state->recorded.load(std::memory_order_acquire), "fooEventSynchronize");
}

fooError_t stream_wait(Runtime* rt, const std::shared_ptr<SharedEvent>& ev, fooEvent_t event, Stream* stream) {
  fooStreamCaptureStatus status = fooStreamCaptureStatusNone;
  if (fooError_t e = rt->scheduler().capture_info(stream, &status, nullptr)) return e;
  if (status != fooStreamCaptureStatusNone) {
    return fail(fooErrorStreamCaptureUnsupported,
                "fooStreamWaitEvent: a capture cannot wait for an interprocess event");
  }
  State* st = ev->state;
  uint32_t target = st->recorded.load(std::memory_order_acquire);
  if (reached(st->completed.load(std::memory_order_acquire), target)) return fooSuccess;
  // The latest record is this process's own: wait for it as for any event.
  if (ev->local_seq.load(std::memory_order_acquire) == target && target != 0) {
    return rt->scheduler().wait_event(stream, event);
  }
  // Another process's record: a kernel that waits for the shared state
  // holds the stream (and one executor) until that work has run.
  return rt->scheduler().launch(stream, [ev, target] {
    if (wait_until(ev, target, "fooStreamWaitEvent") != fooSuccess) fooKernelReportError(fooGetErrorDetail());
  });
}

}  // namespace foo_sim::ipc

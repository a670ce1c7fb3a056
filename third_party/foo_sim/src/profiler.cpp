#include "profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

#include "error.h"
#include "runtime.h"

namespace foo_sim {
namespace profiler {

std::atomic<bool> g_tracing{false};

namespace {

struct Label {
  fooActivityKind kind;
  const char* name;
  uint64_t bytes;
  fooMemcpyKind memcpy_kind;
};

// One thread-local, not four: each is an address lookup of its own in a
// library loaded with dlopen, and the host reads and sets them per launch.
struct ThreadState {
  const Label* label = nullptr;  // &label_storage while labelled (ScopedLabel)
  Label label_storage{};
  uint64_t correlation = 0;
  int id = 0;
};
thread_local ThreadState t_thread;

std::mutex g_mutex;
std::vector<fooActivity> g_activities;  // guarded by g_mutex
// A profile whose stop never comes (torch leaves its profiler on when a
// synchronization raises on the way out) must not grow without bound: past
// this many activities (about 100 MB) new ones are dropped.
constexpr size_t kMaxActivities = size_t{1} << 20;

int thread_id() {
  if (t_thread.id == 0) t_thread.id = static_cast<int>(::syscall(SYS_gettid));
  return t_thread.id;
}

}  // namespace

ScopedLabel::ScopedLabel(fooActivityKind kind, const char* name, uint64_t bytes, fooMemcpyKind memcpy_kind) {
  // Set even when not tracing: a stream capture names its nodes with it
  // (current_label). It is four stores.
  t_thread.label_storage = Label{kind, name, bytes, memcpy_kind};
  t_thread.label = &t_thread.label_storage;
}

ScopedLabel::~ScopedLabel() { t_thread.label = nullptr; }

void current_label(fooActivityKind* kind, const char** name, uint64_t* bytes, fooMemcpyKind* memcpy_kind) {
  if (t_thread.label == nullptr) return;
  *kind = t_thread.label->kind;
  *name = t_thread.label->name;
  *bytes = t_thread.label->bytes;
  *memcpy_kind = t_thread.label->memcpy_kind;
}

ThreadLabel exchange_thread_label(const ThreadLabel& next) {
  ThreadLabel previous;
  previous.labelled = t_thread.label != nullptr;
  previous.kind = t_thread.label_storage.kind;
  previous.name = t_thread.label_storage.name;
  previous.bytes = t_thread.label_storage.bytes;
  previous.memcpy_kind = t_thread.label_storage.memcpy_kind;
  previous.correlation = t_thread.correlation;
  t_thread.label_storage = Label{next.kind, next.name, next.bytes, next.memcpy_kind};
  t_thread.label = next.labelled ? &t_thread.label_storage : nullptr;
  t_thread.correlation = next.correlation;
  return previous;
}

void stamp(ActivityStamp& stamp) {
  stamp.traced = true;
  if (t_thread.label != nullptr) {
    stamp.kind = t_thread.label->kind;
    stamp.name = t_thread.label->name;
    stamp.bytes = t_thread.label->bytes;
    stamp.memcpy_kind = t_thread.label->memcpy_kind;
  }
  if (stamp.name == nullptr) stamp.name = "fooLaunchHostFunc";
  stamp.correlation = t_thread.correlation;
  stamp.launch_ns = now_ns();
  stamp.launch_thread = thread_id();
}

void record(const ActivityStamp& stamp, int device, fooStream_t stream, int64_t start_ns, int64_t end_ns) noexcept {
  fooActivity a{};
  a.kind = stamp.kind;
  a.device = device;
  a.stream = stream;
  a.name = stamp.name;
  a.correlationId = stamp.correlation;
  a.launchNs = stamp.launch_ns;
  a.startNs = start_ns;
  a.endNs = end_ns;
  a.bytes = stamp.bytes;
  a.memcpyKind = stamp.memcpy_kind;
  a.launchThread = stamp.launch_thread;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_activities.size() >= kMaxActivities) return;
  try {
    g_activities.push_back(a);
  } catch (const std::bad_alloc&) {
    // Out of host memory: the activity is dropped, the executor goes on.
  }
}

}  // namespace profiler
}  // namespace foo_sim

using namespace foo_sim;

extern "C" {

fooError_t fooProfilerStart(void) {
  std::lock_guard<std::mutex> lock(profiler::g_mutex);
  profiler::g_activities.clear();
  profiler::g_tracing.store(true);
  return fooSuccess;
}

fooError_t fooProfilerStop(void) {
  // Off first, whatever happens next: work already launched keeps the stamp
  // it took at launch and records itself when it runs.
  profiler::g_tracing.store(false);
  if (fooError_t e = Runtime::check_may_block("fooProfilerStop")) return e;
  Runtime* rt = nullptr;
  // Work launched while tracing records itself when it runs: wait for it.
  if (Runtime::get(&rt) == fooSuccess && rt->started()) {
    for (int d = 0; d < rt->config().device_count; ++d) rt->scheduler().wait_device_idle(d);
  } else {
    (void)fooGetLastError();  // no runtime, so no work to wait for
  }
  return fooSuccess;
}

fooError_t fooProfilerFlush(fooActivityFn_t fn, void* userData) {
  if (fn == nullptr) return fail(fooErrorInvalidValue, "fooProfilerFlush: fn is NULL");
  std::vector<fooActivity> taken;
  {
    std::lock_guard<std::mutex> lock(profiler::g_mutex);
    taken.swap(profiler::g_activities);
  }
  std::stable_sort(taken.begin(), taken.end(),
                   [](const fooActivity& a, const fooActivity& b) { return a.launchNs < b.launchNs; });
  for (const fooActivity& a : taken) fn(&a, userData);
  return fooSuccess;
}

int fooProfilerIsActive(void) { return profiler::tracing() ? 1 : 0; }

void fooProfilerSetCorrelationId(unsigned long long id) { profiler::t_thread.correlation = id; }

}  // extern "C"

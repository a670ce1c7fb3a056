#include "scheduler.h"

#include "race_detector.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "adaptive_mutex.h"
#include "host_work.h"
#include "error.h"
#include "idle_hook.h"
#include "priority.h"
#include "runtime.h"

namespace foo_sim {
namespace {

// How long an idle executor polls before it blocks: long enough to bridge
// the gap between two back-to-back launches, short enough not to steal a
// core from kernels for long.
constexpr auto kSpin = std::chrono::microseconds(50);
// A synchronizing host polls only briefly: it usually waits for real work,
// and its core is better left to the kernels it waits for.
constexpr auto kHostSpin = std::chrono::microseconds(5);
// How long an executor sleeps before the embedding's idle hook runs on it.
// What the hook releases can be dear to get back (a new OpenMP team made a
// training step 5 ms slower, against 3 ms for the step itself), so only a
// pause longer than twenty such steps counts as idle.
constexpr auto kIdleBeforeHook = std::chrono::milliseconds(100);
// The most kernels of one stream an executor takes at once.
constexpr size_t kMaxBatch = 32;

thread_local bool t_on_executor = false;
thread_local bool t_kernel_failed = false;
thread_local std::string t_kernel_message;

bool unreported(const KernelErrorPtr& error) { return error && !error->reported; }

struct ClosureBox {
  std::function<void()> work;
  static void run(void* p) {
    std::unique_ptr<ClosureBox> box(static_cast<ClosureBox*>(p));
    box->work();
  }
};

}  // namespace

Scheduler::Scheduler(const Config& config) : config_(config) {
  spin_before_sleeping(mutex_);
  for (int i = 0; i < config.device_count; ++i) {
    devices_.push_back(std::make_unique<Device>());
    devices_.back()->index = i;
  }
}

void Scheduler::start() {
  Lock lock(mutex_);
  for (auto& d : devices_) {
    auto* s = new Stream();
    s->device = d.get();
    s->is_default = true;
    d->default_stream = s;
    d->streams.push_back(s);
    live_streams_.insert(s);
  }
  for (auto& d : devices_) {
    d->asleep.assign(config_.executors_per_device, false);
    for (int i = 0; i < config_.executors_per_device; ++i) {
      d->executor_cv.push_back(std::make_unique<std::condition_variable>());
    }
    for (int i = 0; i < config_.executors_per_device; ++i) {
      Device* dev = d.get();
      // Executors live as long as the process, like a device's hardware
      // queues; they are never joined, so exit never waits on a kernel.
      std::thread(&Scheduler::executor_main, this, dev, i).detach();
    }
  }
}

// ---------------------------------------------------------------- validation

fooError_t Scheduler::check_stream(Stream* s, const char* what) {
  if (s != nullptr && s == last_live_stream_) return fooSuccess;
  if (live_streams_.count(s) == 0) {
    return fail(fooErrorInvalidResourceHandle,
                format("%s: stream %p is not a live foo stream (destroyed, or never created)", what,
                       static_cast<void*>(s)));
  }
  last_live_stream_ = s;
  return fooSuccess;
}

fooError_t Scheduler::check_event(Event* e, const char* what) const {
  if (e == nullptr || live_events_.count(e) == 0) {
    return fail(fooErrorInvalidResourceHandle,
                format("%s: event %p is not a live foo event (destroyed, or never created)", what,
                       static_cast<void*>(e)));
  }
  return fooSuccess;
}

// ------------------------------------------------------------------- streams

fooError_t Scheduler::create_stream(int device, int priority, Stream** out) {
  auto* s = new Stream();
  s->device = devices_[device].get();
  s->priority = std::clamp(priority, kGreatestStreamPriority, kLeastStreamPriority);
  Lock lock(mutex_);
  s->device->streams.push_back(s);
  live_streams_.insert(s);
  *out = s;
  return fooSuccess;
}

fooError_t Scheduler::destroy_stream(Stream* s) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooStreamDestroy")) return e;
  if (s->is_default) {
    return fail(fooErrorInvalidResourceHandle, "fooStreamDestroy: the default stream cannot be destroyed");
  }
  // The capture still needs the stream (to end or join it back).
  if (s->capture) return capture_conflict(*s->capture, "fooStreamDestroy of a capturing stream");
  live_streams_.erase(s);
  if (last_live_stream_ == s) last_live_stream_ = nullptr;
  s->destroyed = true;
  if (idle(s)) on_idle(s);
  return fooSuccess;
}

fooError_t Scheduler::stream_info(Stream* s, int* device, int* priority, unsigned* flags) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "stream query")) return e;
  if (device) *device = s->device->index;
  if (priority) *priority = s->priority;
  if (flags) *flags = fooStreamDefault;
  return fooSuccess;
}

void Scheduler::note_error(Stream* s, KernelErrorPtr error) {
  if (unreported(error) && !unreported(s->pending_error)) s->pending_error = std::move(error);
}

// Marks the error reported, so the other points that cover it stay quiet.
fooError_t Scheduler::report(const KernelErrorPtr& error) {
  if (!unreported(error)) return fooSuccess;
  error->reported = true;
  return fail(error->code, error->detail);
}

fooError_t Scheduler::report_for(const Event* e, const KernelErrorPtr& error) {
  return (e->flags & fooEventIgnoreFailures) ? fooSuccess : report(error);
}

fooError_t Scheduler::query_stream(Stream* s) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooStreamQuery")) return e;
  // Captured work never runs here, so there is no answer (graph_capture.cpp).
  if (s->capture) return capture_conflict(*s->capture, "fooStreamQuery of a capturing stream");
  if (fooError_t e = unsafe_call_locked("fooStreamQuery")) return e;
  if (fooError_t e = report(s->pending_error)) return e;
  if (!idle(s)) return fooErrorNotReady;
  if (race::on()) race::on_host_waited_stream(s);  // the host saw it done
  return fooSuccess;
}

fooError_t Scheduler::synchronize_stream(Stream* s) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooStreamSynchronize")) return e;
  if (s->capture) return capture_conflict(*s->capture, "fooStreamSynchronize of a capturing stream");
  if (fooError_t e = unsafe_call_locked("fooStreamSynchronize")) return e;
  host_wait(lock, false, [s] { return idle(s); }, s, nullptr);
  if (race::on()) {
    race::on_host_waited_stream(s);
    if (fooError_t e = race::take_deferred()) return e;
  }
  return report(s->pending_error);
}

fooError_t Scheduler::synchronize_device(int device) {
  Lock lock(mutex_);
  Device* d = devices_[device].get();
  if (fooError_t e = conflict_on_device(d, "fooDeviceSynchronize of a device with a capturing stream")) return e;
  if (fooError_t e = unsafe_call_locked("fooDeviceSynchronize")) return e;
  host_wait(lock, false, [d] { return device_idle(d); }, nullptr, d);
  if (race::on()) {
    race::on_host_waited_device(d);
    if (fooError_t e = race::take_deferred()) return e;
  }
  for (Stream* s : d->streams) {
    if (fooError_t e = report(s->pending_error)) return e;
  }
  return fooSuccess;
}

void Scheduler::wait_device_idle(int device) {
  Lock lock(mutex_);
  Device* d = devices_[device].get();
  host_wait(lock, false, [d] { return device_idle(d); }, nullptr, d);
  if (race::on()) race::on_host_waited_device(d);
}

bool Scheduler::device_idle(const Device* d) {
  return std::all_of(d->streams.begin(), d->streams.end(), [](Stream* s) { return idle(s); });
}

// ------------------------------------------------------------------ launches

fooError_t Scheduler::launch(Stream* s, fooHostFn_t fn, void* data, bool serial) {
  Command c;
  c.kind = Command::Kind::Kernel;
  c.fn = fn;
  c.data = data;
  c.serial = serial;
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooLaunchHostFunc")) return e;
  if (s->capture) {
    GraphNode node;
    node.fn = fn;
    node.data = data;
    return capture_node(s, node, "fooLaunchHostFunc");
  }
  if (race::on()) {
    if (fooError_t e = race::on_launch(s)) return e;
  }
  if (config_.launch_blocking) return enqueue_and_wait(lock, s, std::move(c));
  push_then_ring(lock, s, std::move(c));
  return fooSuccess;
}

fooError_t Scheduler::launch(Stream* s, std::function<void()> work, bool serial) {
  return launch_closure(s, std::move(work), GraphNode(), serial);
}

fooError_t Scheduler::launch_owned(Stream* s, fooHostFn_t fn, std::shared_ptr<void> owned,
                                   fooHostFnPrefetch_t prefetch) {
  GraphNode node;
  node.fn = fn;
  node.data = owned.get();
  node.owned = owned;
  node.prefetch = prefetch;
  return launch_closure(s, [fn, owned = std::move(owned)] { fn(owned.get()); }, std::move(node));
}

fooError_t Scheduler::launch_closure(Stream* s, std::function<void()> work, GraphNode as_node, bool serial) {
  // Declared before the lock: if the work is not queued, what it owns is
  // released after the mutex (fooLaunchHostFuncOwned's release may call foo).
  auto box = std::make_unique<ClosureBox>(ClosureBox{std::move(work)});
  GraphNode node = std::move(as_node);
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooLaunchHostFunc")) return e;
  // A capture keeps the closure itself, to run it on every replay (a box
  // runs once and deletes itself).
  if (s->capture) {
    if (!node.fn) node.work = std::move(box->work);
    return capture_node(s, node, "fooLaunchHostFunc");
  }
  // The box holds the work's data too: so the executor that runs it, not
  // this thread, drops the last reference, as for any eager launch.
  node.owned.reset();
  if (race::on()) {
    if (fooError_t e = race::on_launch(s)) return e;
  }
  Command c;
  c.kind = Command::Kind::Kernel;
  c.fn = &ClosureBox::run;
  c.data = box.release();  // owned by the queued command from here on
  c.serial = serial;
  if (config_.launch_blocking) return enqueue_and_wait(lock, s, std::move(c));
  push_then_ring(lock, s, std::move(c));
  return fooSuccess;
}

fooError_t Scheduler::launch_and_wait_erased(Stream* s, void (*run)(void*), void* work,
                                             std::function<void()> (*to_function)(void*), bool serial) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "copy")) return e;
  if (s->capture) return capture_conflict(*s->capture, "a blocking copy or memset on a capturing stream");
  // Serial runtime work (a copy, a memset) that the waiting host would run
  // itself (host work): it waits for what is queued before it, then runs it
  // in place, claiming the stream meanwhile so that work launched from then
  // on queues behind it. Such work needs none of an executor's state, and
  // this saves queueing it with a marker behind it. The race detector, the
  // profiler and the launch delay see it queued, as any launch.
  if (serial && !race::on() && !profiler::tracing() && config_.launch_delay_us == 0) {
    host_wait(lock, false, [s] { return idle(s); }, s, nullptr);
    if (idle(s) && host_may_claim(s->device)) {
      Device* d = s->device;
      claim(s);
      lock.unlock();
      run(work);
      count_host_work(1);
      lock.lock();
      fooError_t e = report(s->pending_error);  // before unclaim(), which may free s
      unclaim(s);
      offer_work(d);
      return e;
    }
  }
  if (race::on()) {
    if (fooError_t e = race::on_launch(s)) return e;
  }
  Command c;
  c.kind = Command::Kind::Kernel;
  c.fn = &ClosureBox::run;
  c.data = new ClosureBox{to_function(work)};  // owned by the queued command
  c.serial = serial;
  return enqueue_and_wait(lock, s, std::move(c));
}

// Queues `c` and a private marker after it, and waits for the marker; then
// reports the stream's pending error, so a failure surfaces at this call.
// On an idle stream, with an executor free for it, the host claims the
// stream first and runs `c` itself (host work): no executor is offered it.
fooError_t Scheduler::enqueue_and_wait(Lock& lock, Stream* s, Command c) {
  auto m = std::make_shared<Marker>();
  HostWorkScope scope = host_work_scope();
  bool serial_only = scope == HostWorkScope::Serial;
  Stream* claimed = idle(s) && host_may_claim(s->device) && (!serial_only || c.serial) ? s : nullptr;
  if (claimed != nullptr) claim(claimed);
  push(s, std::move(c));
  Command record;
  record.kind = Command::Kind::Record;
  record.marker = m;
  push(s, std::move(record));
  host_wait(lock, false, [&m] { return m->done; }, s, nullptr, claimed);
  if (race::on()) race::on_host_waited_stream(s);  // the host waited for everything queued on s
  return report(s->pending_error);
}

fooError_t Scheduler::report_kernel_error(const char* message) {
  if (!t_on_executor) {
    return fail(fooErrorNotPermitted, "fooKernelReportError may only be called from inside a running kernel");
  }
  if (!t_kernel_failed) {
    t_kernel_failed = true;
    t_kernel_message = message ? message : "kernel failed";
  }
  return fooSuccess;
}

bool Scheduler::on_executor_thread() { return t_on_executor; }

bool Scheduler::exchange_executor_role(bool on) { return std::exchange(t_on_executor, on); }

// -------------------------------------------------------------------- events

fooError_t Scheduler::create_event(int device, unsigned flags, Event** out) {
  auto* e = new Event();
  e->device = device;
  e->flags = flags;
  Lock lock(mutex_);
  live_events_.insert(e);
  *out = e;
  return fooSuccess;
}

fooError_t Scheduler::destroy_event(Event* e) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(e, "fooEventDestroy")) return err;
  live_events_.erase(e);
  // Queued records and waits hold the markers themselves, so the event can
  // go at once even with work pending, as in CUDA.
  delete e;
  return fooSuccess;
}

fooError_t Scheduler::event_device(Event* e, int* device) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(e, "fooEventGetDevice")) return err;
  *device = e->device;
  return fooSuccess;
}

fooError_t Scheduler::record_event(Event* e, Stream* s) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(e, "fooEventRecord")) return err;
  if (fooError_t err = check_stream(s, "fooEventRecord")) return err;
  if (s->device->index != e->device) {
    return fail(fooErrorInvalidResourceHandle,
                format("fooEventRecord: the event belongs to foo device %d but the stream to foo device %d",
                       e->device, s->device->index));
  }
  if (s->capture) return capture_record(e, s);
  e->captured_in.reset();  // this record, made outside any capture, is the latest
  Command c;
  c.kind = Command::Kind::Record;
  c.marker = std::make_shared<Marker>();
  e->latest = c.marker;
  push(s, std::move(c));
  if (race::on()) race::on_record(e, s);
  return fooSuccess;
}

fooError_t Scheduler::wait_event(Stream* s, Event* e) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(e, "fooStreamWaitEvent")) return err;
  if (fooError_t err = check_stream(s, "fooStreamWaitEvent")) return err;
  // A wait that involves a capture forks, joins, or fails (graph_capture.cpp).
  bool handled = false;
  fooError_t captured = capture_wait(s, e, live_capture_of(e), &handled);
  if (handled) return captured;
  // Even a record that already completed orders the work queued after this.
  if (race::on()) race::on_wait(s, e);
  const MarkerPtr& m = e->latest;
  // A completed record still has its unreported failure to hand on, in
  // stream order; otherwise there is nothing to wait for.
  if (!m || (m->done && !unreported(m->error))) return fooSuccess;
  Command c;
  c.kind = Command::Kind::Wait;
  c.marker = m;
  push(s, std::move(c));
  return fooSuccess;
}

fooError_t Scheduler::query_event(Event* e) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(e, "fooEventQuery")) return err;
  if (CapturePtr c = live_capture_of(e)) return capture_conflict(*c, "fooEventQuery of an event recorded in a capture");
  if (fooError_t err = unsafe_call_locked("fooEventQuery")) return err;
  const MarkerPtr& m = e->latest;
  if (!m) return fooSuccess;
  if (!m->done) return fooErrorNotReady;
  if (race::on()) race::on_host_waited_event(e);
  return report_for(e, m->error);
}

fooError_t Scheduler::synchronize_event(Event* e) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(e, "fooEventSynchronize")) return err;
  if (CapturePtr c = live_capture_of(e)) {
    return capture_conflict(*c, "fooEventSynchronize of an event recorded in a capture");
  }
  if (fooError_t err = unsafe_call_locked("fooEventSynchronize")) return err;
  MarkerPtr m = e->latest;
  if (!m) return fooSuccess;
  host_wait(lock, (e->flags & fooEventBlockingSync) != 0, [&m] { return m->done; }, m->done ? nullptr : m->stream,
            nullptr);
  if (race::on()) {
    race::on_host_waited_event(e);
    if (fooError_t err = race::take_deferred()) return err;
  }
  return report_for(e, m->error);
}

fooError_t Scheduler::elapsed_time(float* ms, Event* start, Event* end) {
  Lock lock(mutex_);
  if (fooError_t err = check_event(start, "fooEventElapsedTime")) return err;
  if (fooError_t err = check_event(end, "fooEventElapsedTime")) return err;
  for (Event* e : {start, end}) {
    const char* which = e == start ? "start" : "end";
    if (e->flags & fooEventDisableTiming) {
      return fail(fooErrorInvalidResourceHandle,
                  format("fooEventElapsedTime: the %s event was created with fooEventDisableTiming", which));
    }
    if (!e->latest) {
      return fail(fooErrorInvalidResourceHandle,
                  format("fooEventElapsedTime: the %s event has not been recorded", which));
    }
    if (!e->latest->done) {
      return fail(fooErrorNotReady,
                  format("fooEventElapsedTime: the %s event has not completed yet", which));
    }
  }
  // As cudaEventElapsedTime: two devices' clocks are not compared.
  if (start->device != end->device) {
    return fail(fooErrorInvalidResourceHandle,
                format("fooEventElapsedTime: the start event belongs to device %d and the end event to device %d; "
                       "only events of one device can be timed against each other",
                       start->device, end->device));
  }
  std::chrono::duration<float, std::milli> d = end->latest->time - start->latest->time;
  *ms = d.count();
  return fooSuccess;
}

// ---------------------------------------------------------------- the queues
// Everything below runs with mutex_ held.

// Entered with mutex_ held, like everything here, but returns without it.
void Scheduler::push_then_ring(Lock& lock, Stream* s, Command c) {
  struct Deferring {
    bool& flag;
    explicit Deferring(bool& f) : flag(f) { flag = true; }
    ~Deferring() { flag = false; }  // also if push throws
  };
  {
    Deferring deferring(ring_after_unlock_);
    push(s, std::move(c));
  }
  Device* d = std::exchange(doorbell_to_ring_, nullptr);
  lock.unlock();
  if (d != nullptr) d->doorbell.fetch_add(1, std::memory_order_release);
}

void Scheduler::push(Stream* s, Command c) {
  c.seq = next_seq_++;
  if (c.kind == Command::Kind::Record) c.marker->stream = s;
  if (c.kind == Command::Kind::Kernel && !c.self_traced && profiler::tracing()) profiler::stamp(c.stamp);
  bool was_idle = idle(s);
  s->queue.push_back(std::move(c));
  // A busy or blocked stream is moved on by whoever finishes its head.
  if (was_idle) advance(s);
}

// Consumes the records and satisfied waits at the head of an idle stream,
// then either offers its head kernel to the executors, parks it on the
// marker it waits for, or reports it idle.
void Scheduler::advance(Stream* s) {
  while (!s->running && !s->queue.empty()) {
    Command& head = s->queue.front();
    if (head.kind == Command::Kind::Kernel) {
      list_runnable(s);
      return;
    }
    if (head.kind == Command::Kind::Wait && !head.marker->done) {
      head.marker->waiters.push_back(s);
      return;
    }
    MarkerPtr m = std::move(head.marker);
    bool is_record = head.kind == Command::Kind::Record;
    s->queue.pop_front();
    if (is_record) {
      complete(m, s);
    } else {
      // Work after a wait runs on what the record covers, failures included.
      note_error(s, m->error);
    }
  }
  if (idle(s)) on_idle(s);
}

void Scheduler::complete(const MarkerPtr& m, const Stream* recorder) {
  m->error = recorder->pending_error;
  m->time = Clock::now();
  m->done = true;
  progress_.fetch_add(1, std::memory_order_release);
  if (host_waiters_ > 0) host_cv_.notify_all();
  std::vector<Stream*> waiters;
  waiters.swap(m->waiters);
  for (Stream* w : waiters) advance(w);
}

void Scheduler::list_runnable(Stream* s) {
  if (s->listed) return;
  Device* d = s->device;
  s->listed = true;
  d->runnable.push_back(s);
  d->listings.fetch_add(1, std::memory_order_release);
  // Only one device's ring waits for the unlock; another device's (not
  // seen from a launch today) rings at once.
  if (ring_after_unlock_ && (doorbell_to_ring_ == nullptr || doorbell_to_ring_ == d)) {
    doorbell_to_ring_ = d;
  } else {
    d->doorbell.fetch_add(1, std::memory_order_release);
  }
  // Wake a sleeper only if the executors already awake cannot take all the
  // work: a woken executor with nothing to do would spin on a busy core.
  if (d->sleeping > 0 && static_cast<int>(d->runnable.size()) > awake(d) && d->busy < config_.executors_per_device) {
    wake_executor(d, s->home);
  }
}

// A stream's kernels stay on one executor when they can: kernels that use
// OpenMP then find that thread's warm OpenMP team, instead of starting a
// second team while the first one still spins on the same cores.
void Scheduler::wake_executor(Device* d, int preferred) {
  int chosen = preferred;
  if (chosen < 0 || !d->asleep[chosen]) {
    auto it = std::find(d->asleep.begin(), d->asleep.end(), true);
    if (it == d->asleep.end()) return;
    chosen = static_cast<int>(it - d->asleep.begin());
  }
  // Marked awake here, so that the next wake picks another sleeper.
  d->asleep[chosen] = false;
  --d->sleeping;
  ++d->waking;
  d->executor_cv[chosen]->notify_one();
}

bool Scheduler::picked_before(const Stream* a, const Stream* b) {
  return a->priority < b->priority || (a->priority == b->priority && a->queue.front().seq < b->queue.front().seq);
}

// The highest-priority runnable stream; FIFO by submission among equals.
Stream* Scheduler::pick(Device* d) {
  if (d->runnable.empty()) return nullptr;
  auto best = d->runnable.begin();
  for (auto it = best + 1; it != d->runnable.end(); ++it) {
    if (picked_before(*it, *best)) best = it;
  }
  Stream* s = *best;
  *best = d->runnable.back();
  d->runnable.pop_back();
  s->listed = false;
  return s;
}

void Scheduler::on_idle(Stream* s) {
  progress_.fetch_add(1, std::memory_order_release);
  if (host_waiters_ > 0) host_cv_.notify_all();
  if (s->destroyed) {
    auto& v = s->device->streams;
    v.erase(std::find(v.begin(), v.end(), s));
    delete s;
  }
}

void Scheduler::executor_main(Device* d, int executor) {
  t_on_executor = true;
  exchange_thread_device(d->index);
  std::vector<Command> batch;
  batch.reserve(kMaxBatch);
  Lock lock(mutex_);
  for (;;) {
    // A host running work in an executor's place takes its slot (host work).
    Stream* s = d->busy < config_.executors_per_device ? pick(d) : nullptr;
    if (s == nullptr) {
      wait_for_work(d, executor, lock);
      continue;
    }
    s->running = true;
    s->home = executor;
    ++d->busy;
    take_kernels(s, batch);
    uint32_t listed = d->listings.load(std::memory_order_relaxed);
    lock.unlock();
    size_t ran = 0;
    KernelErrorPtr failure = run_kernels(batch, s, listed, &ran);
    lock.lock();
    // Other work became runnable meanwhile, or a kernel failed: the kernels
    // not run yet go back to the head of the stream, and pick() chooses
    // again.
    for (size_t i = batch.size(); i-- > ran;) s->queue.push_front(std::move(batch[i]));
    batch.clear();
    if (failure) note_error(s, std::move(failure));
    s->running = false;
    --d->busy;
    // This executor looks for work right after: it takes what advance()
    // makes runnable, so no sleeper needs waking for it.
    ++d->returning;
    advance(s);
    --d->returning;
  }
}

// The kernels at the head of `s`, in order. Only the first while another
// stream of the device is runnable: pick() chooses between them by priority
// and age after each kernel, as it did before this one.
void Scheduler::take_kernels(Stream* s, std::vector<Command>& batch, bool serial_only) {
  do {
    batch.push_back(std::move(s->queue.front()));
    s->queue.pop_front();
  } while (batch.size() < kMaxBatch && !s->queue.empty() && s->queue.front().kind == Command::Kind::Kernel &&
           (!serial_only || s->queue.front().serial) && s->device->runnable.empty());
}

// Runs `batch` from its first kernel, without the mutex; *ran counts the
// kernels it ran. It stops early once another stream of the device is
// listed runnable (its listings move on from `listed`), and after a kernel
// that failed: that failure reaches the stream before the next kernel runs,
// as without batches, so a query made meanwhile reports it and a later
// failure is kept for the next report.
KernelErrorPtr Scheduler::run_kernels(std::vector<Command>& batch, Stream* s, uint32_t listed, size_t* ran) {
  for (Command& c : batch) {
    if (*ran > 0 && s->device->listings.load(std::memory_order_acquire) != listed) break;
    ++*ran;
    run_kernel(c, s);
    // The last reference to a replayed graph may be this command's: the
    // graph's nodes may own user data whose release calls foo, so it goes
    // before the mutex is taken again.
    c.keep_alive.reset();
    if (t_kernel_failed) {
      auto failure = std::make_shared<KernelError>(KernelError{fooErrorLaunchFailure, std::move(t_kernel_message)});
      t_kernel_failed = false;
      t_kernel_message.clear();
      return failure;
    }
  }
  return nullptr;
}

void Scheduler::wait_for_work(Device* d, int executor, Lock& lock) {
  // One spinner per device is enough to catch the next launch; a second
  // would only take a core from the host that is launching it (with one
  // stream fed by one host, two executors used to take turns spinning, so
  // that three threads were busy on work that needs two).
  if (d->spinning.load(std::memory_order_relaxed) == 0) {
    d->spinning.fetch_add(1);
    // Read under the mutex, with nothing runnable: any stream listed from
    // here on rings after this read.
    uint32_t seen = d->doorbell.load(std::memory_order_relaxed);
    lock.unlock();
    auto until = Clock::now() + kSpin;
    while (d->doorbell.load(std::memory_order_acquire) == seen && Clock::now() < until) {
      std::this_thread::yield();
    }
    lock.lock();
    d->spinning.fetch_sub(1);
    if (!d->runnable.empty()) return;
  }
  ++d->sleeping;
  d->asleep[executor] = true;
  auto woken = [&] { return !d->asleep[executor]; };
  if (has_idle_hook()) {
    // The hook runs only once the executor has slept a while, so that work
    // arriving in bursts finds what the hook releases (an OpenMP team)
    // still there. It runs without the mutex, still marked asleep: a wake
    // meanwhile is seen when the wait below starts.
    if (d->executor_cv[executor]->wait_for(lock, kIdleBeforeHook, woken)) {
      --d->waking;
      return;
    }
    lock.unlock();
    run_idle_hook(fooIdleExecutor);
    lock.lock();
  }
  d->executor_cv[executor]->wait(lock, woken);
  --d->waking;
}

int Scheduler::awake(const Device* d) { return d->spinning.load() + d->returning + d->waking; }

void Scheduler::run_kernel(const Command& c, Stream* s) {
  if (config_.launch_delay_us > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(config_.launch_delay_us));
  }
  // The stream is running this command, so it outlives the call.
  int64_t start_ns = c.stamp.traced ? profiler::now_ns() : 0;
  try {
    c.fn(c.data);
  } catch (const std::exception& e) {
    report_kernel_error(e.what());
  } catch (...) {
    report_kernel_error("kernel threw an unknown exception");
  }
  if (c.stamp.traced) profiler::record(c.stamp, s->device->index, s, start_ns, profiler::now_ns());
}

void Scheduler::host_wait(Lock& lock, bool blocking, const std::function<bool()>& pred, Stream* awaited,
                          Device* device, Stream* claimed) {
  if (claimed == nullptr && pred()) return;
  bool serial_only = host_work_scope() == HostWorkScope::Serial;
  // A host the embedding keeps from running kernels (its hook declined)
  // does not try again in this wait: each try takes the stream from the
  // executors for nothing.
  bool may_work = run_host_work(lock, pred, awaited, device, claimed, serial_only);
  if (pred()) return;
  if (!blocking) {
    auto until = Clock::now() + kHostSpin;
    while (Clock::now() < until) {
      uint64_t seen = progress_.load(std::memory_order_acquire);
      lock.unlock();
      while (progress_.load(std::memory_order_acquire) == seen && Clock::now() < until) {
        std::this_thread::yield();
      }
      lock.lock();
      if (pred()) return;
      // What it waits for became runnable, and no executor took it yet.
      if (may_work && host_takeable(awaited, device, serial_only) != nullptr) {
        may_work = run_host_work(lock, pred, awaited, device, nullptr, serial_only);
        if (pred()) return;
      }
    }
  }
  if (has_idle_hook()) {
    lock.unlock();
    run_idle_hook(fooIdleHost);
    lock.lock();
    if (pred()) return;
  }
  ++host_waiters_;
  host_cv_.wait(lock, pred);
  --host_waiters_;
}

}  // namespace foo_sim

// Host work: the Scheduler members with which a host thread that waits for
// queued work runs it itself (foo_runtime.h, fooSetHostWorkHook).
//
// The host takes a stream only where an idle executor would take it now: a
// slot of the device is free (Device::busy), and no runnable stream that
// pick() would choose first is left without one. So which streams run
// concurrently, and in what order of priority, is what the executors alone
// would give; the work just runs on the thread that waits for it, without
// the two hand-overs between threads (queueing it to a sleeping or spinning
// executor, and its completion back to the host).
#include <vector>

#include "host_work.h"
#include "scheduler.h"

namespace foo_sim {
namespace {

// How many waits a stream's head may lead through to the stream that holds
// it up: a bound only, such chains are short.
constexpr int kMaxHops = 16;

std::vector<Command>& host_batch() {
  thread_local std::vector<Command> batch;
  return batch;
}

}  // namespace

bool Scheduler::run_host_work(Lock& lock, const std::function<bool()>& pred, Stream* awaited, Device* device,
                              Stream* claimed, bool serial_only) {
  Stream* s = claimed;
  if (s == nullptr) {
    s = host_takeable(awaited, device, serial_only);
    if (s == nullptr) return true;
    claim(s);
  }
  bool declined = false;
  HostWork work;
  std::vector<Command>& batch = host_batch();
  while (s != nullptr) {
    Device* d = s->device;
    take_kernels(s, batch, serial_only);
    uint32_t listed = d->listings.load(std::memory_order_relaxed);
    lock.unlock();
    size_t ran = 0;
    KernelErrorPtr failure;
    bool entered = work.enter();
    declined = !entered;
    if (entered) {
      work.serve_device(d->index);
      failure = run_kernels(batch, s, listed, &ran);
      count_host_work(ran);
    }
    lock.lock();
    for (size_t i = batch.size(); i-- > ran;) s->queue.push_front(std::move(batch[i]));
    batch.clear();
    if (failure) note_error(s, std::move(failure));
    // This host may take the stream again at once: offer_work() below wakes
    // an executor for what it leaves.
    unclaim(s);
    s = nullptr;
    if (entered && !pred()) {
      s = host_takeable(awaited, device, serial_only);
      if (s != nullptr) claim(s);
    }
    offer_work(d);
  }
  if (work.entered()) {
    lock.unlock();
    work.leave();
    lock.lock();
  }
  return !declined;
}

Stream* Scheduler::host_takeable(Stream* awaited, Device* device, bool serial_only) const {
  Stream* s = nullptr;
  if (awaited != nullptr) {
    s = holding_up(awaited);
    if (s == nullptr || !host_may_take(s)) return nullptr;
  } else {
    if (device == nullptr || device->runnable.empty() || device->busy >= config_.executors_per_device) return nullptr;
    s = device->runnable.front();
    for (Stream* other : device->runnable) {
      if (picked_before(other, s)) s = other;
    }
  }
  // A listed stream's head is a kernel (list_runnable).
  return !serial_only || s->queue.front().serial ? s : nullptr;
}

// The stream whose queued kernels stand before `s`'s progress: `s`, or,
// while its head waits for a record not yet made, the stream that will make
// it (and so on).
Stream* Scheduler::holding_up(Stream* s) {
  for (int hop = 0; hop < kMaxHops && s != nullptr; ++hop) {
    if (s->running || s->queue.empty()) return s;
    const Command& head = s->queue.front();
    if (head.kind != Command::Kind::Wait || head.marker->done) return s;
    s = head.marker->stream;
  }
  return s;
}

bool Scheduler::host_may_take(const Stream* s) const {
  if (!s->listed) return false;  // running, waiting, or nothing to run
  const Device* d = s->device;
  int free = config_.executors_per_device - d->busy;
  for (const Stream* other : d->runnable) {
    if (other != s && picked_before(other, s)) --free;
  }
  return free > 0;
}

bool Scheduler::host_may_claim(const Device* d) const {
  return d->busy + static_cast<int>(d->runnable.size()) < config_.executors_per_device;
}

void Scheduler::claim(Stream* s) {
  Device* d = s->device;
  if (s->listed) {
    auto& v = d->runnable;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == s) {
        v[i] = v.back();
        v.pop_back();
        break;
      }
    }
    s->listed = false;
  }
  s->running = true;
  ++d->busy;
}

void Scheduler::unclaim(Stream* s) {
  Device* d = s->device;
  s->running = false;
  --d->busy;
  // The host looks for work right after, as an executor returning from a
  // kernel does: advance() wakes no sleeper for what it may take.
  ++d->returning;
  advance(s);
  --d->returning;
}

void Scheduler::offer_work(Device* d) {
  if (d->sleeping > 0 && static_cast<int>(d->runnable.size()) > awake(d) && d->busy < config_.executors_per_device) {
    wake_executor(d, d->runnable.front()->home);
  }
}

}  // namespace foo_sim

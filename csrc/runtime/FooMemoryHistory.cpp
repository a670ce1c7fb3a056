#include "runtime/FooMemoryHistory.h"

#include <algorithm>
#include <mutex>

#include <c10/util/ApproximateClock.h>

namespace foo {

namespace detail {
std::atomic<bool> g_history_recording{false};
}

namespace {

// The options are read by every recorded allocation, written rarely: a
// mutex-guarded copy, with the fields the fast paths need mirrored in
// atomics.
std::mutex g_options_mutex;
HistoryOptions g_options;
std::atomic<int> g_context_level{static_cast<int>(RecordContext::NEVER)};
std::atomic<CreateContextFn> g_gather{nullptr};
std::atomic<bool> g_trace{false};
std::atomic<size_t> g_max_entries{SIZE_MAX};
// Rings compare this with the generation they last saw and empty
// themselves when it moved: clearing needs no list of rings.
std::atomic<uint64_t> g_clear_generation{0};
std::atomic<uint32_t> g_skipped{0};  // bit per TraceEntry::Action

std::mutex g_observers_mutex;
std::vector<OutOfMemoryObserver> g_observers;

}  // namespace

void set_history_options(const HistoryOptions& options) {
  std::lock_guard<std::mutex> lock(g_options_mutex);
  g_options = options;
  uint32_t skipped = 0;
  for (auto action : options.skip_actions) skipped |= 1u << static_cast<unsigned>(action);
  g_skipped.store(skipped);
  g_context_level.store(static_cast<int>(options.enabled ? options.context : RecordContext::NEVER));
  g_gather.store(options.enabled ? options.gather : nullptr);
  g_trace.store(options.enabled && options.trace);
  g_max_entries.store(std::max<size_t>(options.max_entries, 1));
  if (!options.enabled || options.clear_history) g_clear_generation.fetch_add(1);
  detail::g_history_recording.store(options.enabled);
}

std::shared_ptr<c10::GatheredContext> gather_context(RecordContext level) noexcept {
  if (g_context_level.load(std::memory_order_relaxed) < static_cast<int>(level)) return nullptr;
  CreateContextFn gather = g_gather.load(std::memory_order_relaxed);
  if (gather == nullptr) return nullptr;
  try {
    return gather();
  } catch (...) {
    return nullptr;
  }
}

bool history_keeps_state() {
  return g_context_level.load(std::memory_order_relaxed) >= static_cast<int>(RecordContext::STATE);
}

void TraceRing::record(TraceEntry::Action action, c10::DeviceIndex device, const void* addr, size_t size,
                       void* stream, std::shared_ptr<c10::GatheredContext> context) noexcept {
  try {
    record_entry(action, device, addr, size, stream, std::move(context));
  } catch (...) {
    // Out of host memory for the trace: the entry is lost, the allocation
    // (or the free, in a deleter) goes on.
  }
}

void TraceRing::record_entry(TraceEntry::Action action, c10::DeviceIndex device, const void* addr, size_t size,
                             void* stream, std::shared_ptr<c10::GatheredContext> context) {
  if (!g_trace.load(std::memory_order_relaxed)) return;
  if (g_skipped.load(std::memory_order_relaxed) & (1u << static_cast<unsigned>(action))) return;
  uint64_t generation = g_clear_generation.load();
  if (generation != generation_) {
    clear();
    generation_ = generation;
  }
  // As CUDA's: at context="state" stacks belong to the live blocks only,
  // not to the trace.
  if (g_context_level.load(std::memory_order_relaxed) < static_cast<int>(RecordContext::ALLOC)) context.reset();
  TraceEntry entry(action, device, reinterpret_cast<size_t>(addr), size, stream, {0, 0}, 0, std::move(context));
  entry.time_.t_ = c10::getTime();  // wall-clock nanoseconds: snapshots report microseconds
  size_t capacity = g_max_entries.load(std::memory_order_relaxed);
  if (next_ != 0 && ring_.size() < capacity) {  // max_entries grew after the ring wrapped: oldest first again
    ring_ = entries();
    next_ = 0;
  }
  if (ring_.size() > capacity) {  // max_entries shrank: keep the newest
    std::vector<TraceEntry> kept = entries();
    kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(capacity));
    ring_ = std::move(kept);
    next_ = 0;
  }
  if (ring_.size() < capacity) {
    ring_.push_back(std::move(entry));
  } else {
    ring_[next_] = std::move(entry);
    next_ = (next_ + 1) % capacity;
  }
}

std::vector<TraceEntry> TraceRing::entries() const {
  if (g_clear_generation.load() != generation_) return {};
  std::vector<TraceEntry> ordered;
  ordered.reserve(ring_.size());
  for (size_t i = 0; i < ring_.size(); ++i) ordered.push_back(ring_[(next_ + i) % ring_.size()]);
  return ordered;
}

void TraceRing::clear() {
  ring_.clear();
  next_ = 0;
}

void attach_out_of_memory_observer(OutOfMemoryObserver observer) {
  std::lock_guard<std::mutex> lock(g_observers_mutex);
  g_observers.push_back(std::move(observer));
}

void notify_out_of_memory(int64_t device, size_t requested, size_t device_total, size_t device_free) {
  std::vector<OutOfMemoryObserver> observers;
  {
    std::lock_guard<std::mutex> lock(g_observers_mutex);
    observers = g_observers;
  }
  for (auto& observer : observers) observer(device, requested, device_total, device_free);
}

}  // namespace foo

// Memory history for snapshots: what torch.foo.memory._record_memory_history
// asked the caching allocator to remember, the ring of trace entries each
// device keeps, and the out-of-memory observers.
//
// The allocator asks `history_recording()` (one relaxed atomic load) before
// doing any of this work, so with recording off an allocation pays nothing
// more. Contexts (stack traces) are gathered by a function the Python layer
// installs (torch's CapturedTraceback), and always before the allocator's
// lock is taken: gathering Python frames may wait for the GIL, and a thread
// holding the GIL may be waiting for that lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

namespace foo {

using c10::CachingDeviceAllocator::BlockInfo;
using c10::CachingDeviceAllocator::CreateContextFn;
using c10::CachingDeviceAllocator::RecordContext;
using c10::CachingDeviceAllocator::SegmentInfo;
using c10::CachingDeviceAllocator::TraceEntry;

// What to record, as _record_memory_history's arguments say it.
struct HistoryOptions {
  bool enabled = false;     // keep contexts of live blocks (enabled="state" or "all")
  bool trace = false;       // also keep the trace of actions (enabled="all")
  RecordContext context = RecordContext::NEVER;
  CreateContextFn gather = nullptr;  // null: no stack traces
  size_t max_entries = SIZE_MAX;     // per device; older entries are overwritten
  bool clear_history = false;
  std::vector<TraceEntry::Action> skip_actions;
};

// Changes what the allocator records. Turning recording off, or
// clear_history, empties the traces.
void set_history_options(const HistoryOptions& options);

namespace detail {
extern std::atomic<bool> g_history_recording;
}

// True while any recording is on: the allocator's only cost when it is off.
inline bool history_recording() { return detail::g_history_recording.load(std::memory_order_relaxed); }

// The current stack, if recording keeps contexts at `level` or more
// (STATE for allocations and segments, ALL for frees); otherwise null.
// Never throws: a failure to gather just leaves the entry without frames.
std::shared_ptr<c10::GatheredContext> gather_context(RecordContext level) noexcept;

// Whether live blocks keep the context of their allocation.
bool history_keeps_state();

// A device's trace: a ring of at most max_entries entries, oldest first
// when read. Guarded by its allocator's lock.
class TraceRing {
 public:
  // Adds an entry if tracing is on and `action` is not skipped.
  void record(TraceEntry::Action action, c10::DeviceIndex device, const void* addr, size_t size, void* stream,
              std::shared_ptr<c10::GatheredContext> context) noexcept;
  std::vector<TraceEntry> entries() const;
  void clear();

 private:
  void record_entry(TraceEntry::Action action, c10::DeviceIndex device, const void* addr, size_t size, void* stream,
                    std::shared_ptr<c10::GatheredContext> context);
  std::vector<TraceEntry> ring_;
  size_t next_ = 0;  // where the next entry goes once the ring is full
  uint64_t generation_ = 0;  // the clear generation the entries belong to
};

// An observer called after an allocation failed for want of memory, before
// the OutOfMemoryError is raised, with no allocator lock held (it may take a
// snapshot): (device, bytes requested, device capacity, bytes free on it).
using OutOfMemoryObserver =
    std::function<void(int64_t device, size_t requested, size_t device_total, size_t device_free)>;

void attach_out_of_memory_observer(OutOfMemoryObserver observer);
void notify_out_of_memory(int64_t device, size_t requested, size_t device_total, size_t device_free);

}  // namespace foo

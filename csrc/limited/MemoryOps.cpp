// torch.ops._foo_C: the caching allocator's controls, user memory pools,
// memory history and snapshots.
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <torch/library.h>

#include "limited/Json.h"
#include "limited/Ops.h"
#include "limited/Stacks.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooHostAllocator.h"
#include "runtime/FooMemPool.h"
#include "runtime/FooMemoryHistory.h"
#include "runtime/FooRawAlloc.h"

namespace foo::limited {
namespace {

c10::MempoolId_t pool_id(int64_t id0, int64_t id1) { return {static_cast<uint64_t>(id0), static_cast<uint64_t>(id1)}; }

// torch.foo.MemPool objects by handle: the Python object holds its handle
// and releases it when it goes (releasing may wait for streams; torch's
// operator calls do so without the GIL).
class MemPools {
 public:
  int64_t create(bool use_on_oom, bool no_split) {
    auto pool = std::make_unique<FooMemPool>(use_on_oom, no_split);
    std::lock_guard<std::mutex> lock(mutex_);
    pools_.emplace(++last_, std::move(pool));
    return last_;
  }
  std::tuple<int64_t, int64_t, int64_t> info(int64_t handle) {
    const FooMemPool& p = get(handle);
    return {static_cast<int64_t>(p.id().first), static_cast<int64_t>(p.id().second), p.device()};
  }
  int64_t use_count(int64_t handle) { return get(handle).use_count(); }
  void release(int64_t handle) {
    std::unique_ptr<FooMemPool> released;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = pools_.find(handle);
      TORCH_CHECK(it != pools_.end(), "torch.foo.MemPool: no pool with handle ", handle);
      released = std::move(it->second);
      pools_.erase(it);
    }
  }

 private:
  FooMemPool& get(int64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(handle);
    TORCH_CHECK(it != pools_.end(), "torch.foo.MemPool: no pool with handle ", handle);
    return *it->second;
  }

  std::mutex mutex_;
  std::unordered_map<int64_t, std::unique_ptr<FooMemPool>> pools_;
  int64_t last_ = 0;
};

MemPools& mem_pools() {
  static MemPools* pools = new MemPools();  // outlives every Python object
  return *pools;
}

RecordContext parse_context(const std::optional<std::string>& context) {
  if (!context) return RecordContext::NEVER;
  if (*context == "state") return RecordContext::STATE;
  if (*context == "alloc") return RecordContext::ALLOC;
  if (*context == "all") return RecordContext::ALL;
  TORCH_CHECK_VALUE(false, "_record_memory_history: context must be None, 'state', 'alloc' or 'all', not '", *context,
                    "'");
}

void record_memory_history(const std::optional<std::string>& enabled, const std::optional<std::string>& context,
                           const std::string& stacks, int64_t max_entries, bool clear_history,
                           const std::vector<std::string>& skip_actions) {
  TORCH_CHECK_VALUE(!enabled || *enabled == "state" || *enabled == "all",
                    "_record_memory_history: enabled must be None, 'state' or 'all', not '", enabled.value_or(""), "'");
  TORCH_CHECK_VALUE(stacks == "python" || stacks == "all",
                    "_record_memory_history: stacks must be 'python' or 'all', not '", stacks, "'");
  TORCH_CHECK_VALUE(max_entries > 0, "_record_memory_history: max_entries must be positive");
  HistoryOptions options;
  options.enabled = enabled.has_value();
  options.trace = enabled && *enabled == "all";
  options.context = parse_context(context);
  options.max_entries = static_cast<size_t>(max_entries);
  options.clear_history = clear_history;
  for (const auto& name : skip_actions) {
    options.skip_actions.push_back(c10::CachingDeviceAllocator::parseTraceEntryAction(name));
  }
  if (options.context != RecordContext::NEVER) {
    options.gather = stacks == "all" ? &gather_python_and_cpp_stack : &gather_python_stack;
  }
  foo::record_memory_history(options);
}

const char* action_name(TraceEntry::Action action) {
  switch (action) {
    case TraceEntry::ALLOC: return "alloc";
    case TraceEntry::FREE_REQUESTED: return "free_requested";
    case TraceEntry::FREE_COMPLETED: return "free_completed";
    case TraceEntry::SEGMENT_ALLOC: return "segment_alloc";
    case TraceEntry::SEGMENT_FREE: return "segment_free";
    case TraceEntry::SEGMENT_MAP: return "segment_map";
    case TraceEntry::SEGMENT_UNMAP: return "segment_unmap";
    case TraceEntry::SNAPSHOT: return "snapshot";
    case TraceEntry::OOM: return "oom";
  }
  return "unknown";
}

// Symbolizes the C++ parts of every distinct context once.
class FrameTable {
 public:
  void add(const std::shared_ptr<c10::GatheredContext>& context) {
    auto* stack = dynamic_cast<GatheredStack*>(context.get());
    if (stack && stack->cpp && index_.emplace(stack->cpp.get(), pending_.size()).second) {
      pending_.push_back(stack->cpp.get());
    }
  }
  void symbolize() { symbolized_ = torch::symbolize(pending_); }

  void write(JsonWriter& out, const std::shared_ptr<c10::GatheredContext>& context) const {
    out.begin_array();
    if (auto* stack = dynamic_cast<GatheredStack*>(context.get())) {
      for (const auto& f : stack->python) {
        out.begin_object().key("filename").value(f.filename).key("line").value(f.line).key("name").value(f.name);
        out.end_object();
      }
      if (stack->cpp) {
        for (uint64_t i : symbolized_.tracebacks.at(index_.at(stack->cpp.get()))) {
          const auto& f = symbolized_.all_frames.at(i);
          out.begin_object().key("filename").value(f.filename).key("line").value(static_cast<int64_t>(f.lineno));
          out.key("name").value(f.funcname).end_object();
        }
      }
    }
    out.end_array();
  }

 private:
  std::unordered_map<torch::CapturedTraceback*, size_t> index_;
  std::vector<torch::CapturedTraceback*> pending_;
  torch::SymbolizedTracebacks symbolized_;
};

// The default stream as CUDA's null stream, 0; any other by its handle.
class SnapshotStreamIds {
 public:
  SnapshotStreamIds() {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      fooStream_t s = nullptr;
      if (fooDeviceGetDefaultStream(d, &s) == fooSuccess) defaults_.push_back(s);
    }
  }
  uint64_t operator()(const void* s) const {
    return std::find(defaults_.begin(), defaults_.end(), s) != defaults_.end() ? 0 : reinterpret_cast<uint64_t>(s);
  }

 private:
  std::vector<const void*> defaults_;
};

// torch.cuda.memory._snapshot()'s dictionary, as JSON.
std::string memory_snapshot_json() {
  const SnapshotStreamIds stream_id;
  MemorySnapshot snapshot = memory_snapshot();
  FrameTable table;
  for (const auto& segment : snapshot.segments) {
    table.add(segment.context_when_allocated);
    for (const auto& block : segment.blocks) table.add(block.context_when_allocated);
  }
  for (const auto& trace : snapshot.device_traces) {
    for (const auto& entry : trace) table.add(entry.context_);
  }
  table.symbolize();

  JsonWriter out;
  out.begin_object().key("segments").begin_array();
  for (const auto& segment : snapshot.segments) {
    out.begin_object();
    out.key("device").value(static_cast<int64_t>(segment.device));
    out.key("address").value(static_cast<uint64_t>(segment.address));
    out.key("total_size").value(static_cast<uint64_t>(segment.total_size));
    out.key("allocated_size").value(static_cast<uint64_t>(segment.allocated_size));
    out.key("active_size").value(static_cast<uint64_t>(segment.active_size));
    out.key("requested_size").value(static_cast<uint64_t>(segment.requested_size));
    out.key("stream").value(stream_id(segment.stream));
    out.key("segment_type").value(segment.is_large ? "large" : "small");
    out.key("segment_pool_id").begin_array().value(static_cast<uint64_t>(segment.owner_private_pool_id.first));
    out.value(static_cast<uint64_t>(segment.owner_private_pool_id.second)).end_array();
    out.key("is_expandable").value(false);
    out.key("frames");
    table.write(out, segment.context_when_allocated);
    out.key("blocks").begin_array();
    size_t address = segment.address;
    for (const auto& block : segment.blocks) {
      out.begin_object();
      out.key("address").value(static_cast<uint64_t>(address));
      out.key("size").value(static_cast<uint64_t>(block.size));
      out.key("requested_size").value(static_cast<uint64_t>(block.requested_size));
      out.key("state").value(block.allocated ? "active_allocated" : (block.active ? "active_pending_free" : "inactive"));
      out.key("frames");
      table.write(out, block.context_when_allocated);
      out.end_object();
      address += block.size;
    }
    out.end_array().end_object();
  }
  out.end_array().key("device_traces").begin_array();
  for (const auto& trace : snapshot.device_traces) {
    out.begin_array();
    for (const auto& entry : trace) {
      out.begin_object();
      out.key("action").value(action_name(entry.action_));
      out.key(entry.action_ == TraceEntry::OOM ? "device_free" : "addr").value(static_cast<uint64_t>(entry.addr_));
      out.key("size").value(static_cast<uint64_t>(entry.size_));
      out.key("stream").value(stream_id(entry.stream_));
      out.key("device").value(static_cast<int64_t>(entry.device_));
      out.key("time_us").value(static_cast<int64_t>(entry.time_.t_ / 1000));
      out.key("frames");
      table.write(out, entry.context_);
      out.key("compile_context").value(entry.compile_context_);
      out.key("user_metadata").value(entry.user_metadata_);
      out.key("pool_id").begin_array().value(0).value(0).end_array();
      out.end_object();
    }
    out.end_array();
  }
  out.end_array().end_object();
  return std::move(out).str();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(_foo_C, m) {
  m.def("set_memory_fraction(int d, float fraction) -> ()",
        [](int64_t d, double fraction) { set_memory_fraction(device_index(d), fraction); });
  m.def("get_memory_fraction(int d) -> float", [](int64_t d) { return memory_fraction(device_index(d)); });
  m.def("caching_allocator_alloc(int size, Stream stream) -> int", [](int64_t size, c10::Stream stream) {
    TORCH_CHECK_VALUE(size >= 0, "caching_allocator_alloc: size must not be negative, got ", size);
    return reinterpret_cast<int64_t>(raw_alloc(static_cast<size_t>(size), stream));
  });
  m.def("caching_allocator_delete(int ptr) -> ()", [](int64_t ptr) { raw_delete(reinterpret_cast<void*>(ptr)); });
  m.def("reset_peak_host_memory_stats() -> ()", [] { getFooHostAllocator()->reset_peak_stats(); });
  m.def("reset_accumulated_host_memory_stats() -> ()", [] { getFooHostAllocator()->reset_accumulated_stats(); });

  m.def("mem_pool_create(bool use_on_oom, bool no_split) -> int",
        [](bool use_on_oom, bool no_split) { return mem_pools().create(use_on_oom, no_split); });
  m.def("mem_pool_info(int handle) -> (int, int, int)", [](int64_t h) { return mem_pools().info(h); });
  m.def("mem_pool_use_count(int handle) -> int", [](int64_t h) { return mem_pools().use_count(h); });
  m.def("mem_pool_release(int handle) -> ()", [](int64_t h) { mem_pools().release(h); });
  m.def("begin_allocate_current_thread_to_pool(int d, int id0, int id1) -> ()", [](int64_t d, int64_t a, int64_t b) {
    begin_allocate_current_thread_to_pool(device_index(d), pool_id(a, b));
  });
  m.def("end_allocate_to_pool(int d, int id0, int id1) -> ()",
        [](int64_t d, int64_t a, int64_t b) { end_allocate_to_pool(device_index(d), pool_id(a, b)); });
  m.def("release_pool(int d, int id0, int id1) -> ()",
        [](int64_t d, int64_t a, int64_t b) { release_pool(device_index(d), pool_id(a, b)); });

  m.def("record_memory_history(str? enabled, str? context, str stacks, int max_entries, bool clear_history, "
        "str[] skip_actions) -> ()",
        &record_memory_history);
  m.def("memory_snapshot() -> str", &memory_snapshot_json);
}

}  // namespace foo::limited

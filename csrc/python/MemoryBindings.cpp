// Memory history and snapshots for torch.foo.memory: turns the allocator's
// segments and trace entries into the dictionary torch.cuda.memory._snapshot()
// returns, so that torch.cuda._memory_viz renders it, and supplies the stack
// gathering (torch's CapturedTraceback) the runtime layer cannot link.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/csrc/profiler/combined_traceback.h>

#include "aten_runtime/FooHostAllocator.h"
#include "python/Bindings.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooMemoryHistory.h"
#include "runtime/FooRawAlloc.h"

namespace py = pybind11;

// From torch/csrc/profiler/python/combined_traceback.h (libtorch_python),
// declared here because that header includes nlohmann/json.hpp, which the
// wheel does not ship.
namespace torch {
std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
void freeDeadCapturedTracebackFrames();
void installCapturedTracebackPython();
}  // namespace torch

namespace foo::python {

namespace {

// CreateContextFn is a plain function pointer: one per choice of `stacks`.
std::shared_ptr<c10::GatheredContext> gather_python_stacks() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false);
}

std::shared_ptr<c10::GatheredContext> gather_all_stacks() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/true);
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
                           const std::string& stacks, size_t max_entries, bool clear_history,
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
  options.max_entries = max_entries;
  options.clear_history = clear_history;
  for (const auto& name : skip_actions) options.skip_actions.push_back(c10::CachingDeviceAllocator::parseTraceEntryAction(name));
  if (options.context != RecordContext::NEVER) {
    torch::installCapturedTracebackPython();  // lets CapturedTraceback see Python frames
    options.gather = stacks == "all" ? &gather_all_stacks : &gather_python_stacks;
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

// Symbolizes every distinct context once; frames(ctx) is then a lookup.
class FrameTable {
 public:
  void add(const std::shared_ptr<c10::GatheredContext>& context) {
    if (!context) return;
    auto* traceback = dynamic_cast<torch::CapturedTraceback*>(context.get());
    if (traceback && index_.emplace(traceback, pending_.size()).second) pending_.push_back(traceback);
  }

  void symbolize() { frames_ = torch::py_symbolize(pending_); }

  py::object frames(const std::shared_ptr<c10::GatheredContext>& context) const {
    if (context) {
      auto it = index_.find(dynamic_cast<torch::CapturedTraceback*>(context.get()));
      if (it != index_.end()) return frames_[it->second];
    }
    return py::list();
  }

 private:
  std::unordered_map<torch::CapturedTraceback*, size_t> index_;
  std::vector<torch::CapturedTraceback*> pending_;
  std::vector<py::object> frames_;
};

// A stream as CUDA's snapshots name it: the default stream is CUDA's null
// stream, 0, which PyTorch's memory viewer takes as the default (and then
// labels no stream); any other by its handle.
class SnapshotStreamIds {
 public:
  SnapshotStreamIds() {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      fooStream_t s = nullptr;
      if (fooDeviceGetDefaultStream(d, &s) == fooSuccess) defaults_.push_back(s);
    }
  }
  uintptr_t operator()(const void* s) const {
    return std::find(defaults_.begin(), defaults_.end(), s) != defaults_.end() ? 0 : reinterpret_cast<uintptr_t>(s);
  }

 private:
  std::vector<const void*> defaults_;
};

py::dict snapshot_dict() {
  const SnapshotStreamIds stream_id;
  MemorySnapshot snapshot;
  {
    py::gil_scoped_release no_gil;  // the allocator's locks are taken without the GIL, as everywhere
    snapshot = memory_snapshot();
  }
  FrameTable table;
  for (const auto& segment : snapshot.segments) {
    table.add(segment.context_when_allocated);
    for (const auto& block : segment.blocks) table.add(block.context_when_allocated);
  }
  for (const auto& trace : snapshot.device_traces) {
    for (const auto& entry : trace) table.add(entry.context_);
  }
  table.symbolize();

  py::list segments;
  for (const auto& segment : snapshot.segments) {
    py::dict s;
    s["device"] = segment.device;
    s["address"] = segment.address;
    s["total_size"] = segment.total_size;
    s["allocated_size"] = segment.allocated_size;
    s["active_size"] = segment.active_size;
    s["requested_size"] = segment.requested_size;
    s["stream"] = stream_id(segment.stream);
    s["segment_type"] = segment.is_large ? "large" : "small";
    s["segment_pool_id"] = py::make_tuple(segment.owner_private_pool_id.first, segment.owner_private_pool_id.second);
    s["is_expandable"] = false;
    s["frames"] = table.frames(segment.context_when_allocated);
    py::list blocks;
    size_t address = segment.address;
    for (const auto& block : segment.blocks) {
      py::dict b;
      b["address"] = address;
      b["size"] = block.size;
      b["requested_size"] = block.requested_size;
      b["state"] = block.allocated ? "active_allocated" : (block.active ? "active_pending_free" : "inactive");
      b["frames"] = table.frames(block.context_when_allocated);
      blocks.append(b);
      address += block.size;
    }
    s["blocks"] = blocks;
    segments.append(s);
  }

  py::list device_traces;
  for (const auto& trace : snapshot.device_traces) {
    py::list entries;
    for (const auto& entry : trace) {
      py::dict e;
      e["action"] = action_name(entry.action_);
      // As CUDA's: an oom entry carries the device's free bytes instead of an address.
      e[entry.action_ == TraceEntry::OOM ? "device_free" : "addr"] = entry.addr_;
      e["size"] = entry.size_;
      e["stream"] = stream_id(entry.stream_);
      e["device"] = entry.device_;
      e["time_us"] = entry.time_.t_ / 1000;
      e["frames"] = table.frames(entry.context_);
      e["compile_context"] = entry.compile_context_;
      e["user_metadata"] = entry.user_metadata_;
      e["pool_id"] = py::make_tuple(0, 0);
      entries.append(e);
    }
    device_traces.append(entries);
  }
  torch::freeDeadCapturedTracebackFrames();  // Python frames of contexts dropped since the last call

  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = device_traces;
  return result;
}

}  // namespace

void bind_memory(py::module& m) {
  m.def("_record_memory_history", &record_memory_history, py::arg("enabled"), py::arg("context"), py::arg("stacks"),
        py::arg("max_entries"), py::arg("clear_history"), py::arg("skip_actions"));
  m.def("_memory_snapshot", &snapshot_dict);
  m.def("_set_memory_fraction", [](c10::DeviceIndex device, double fraction) {
    foo::set_memory_fraction(device, fraction);
  });
  m.def("_get_memory_fraction", [](c10::DeviceIndex device) { return foo::memory_fraction(device); });
  m.def("_caching_allocator_alloc", [](size_t nbytes, c10::Stream stream) {
    return reinterpret_cast<uintptr_t>(foo::raw_alloc_with_stream(nbytes, stream));
  });
  m.def("_caching_allocator_delete", [](uintptr_t ptr) { foo::raw_delete(reinterpret_cast<void*>(ptr)); });
  m.def("_reset_peak_host_memory_stats", [] { getFooHostAllocator()->reset_peak_stats(); });
  m.def("_reset_accumulated_host_memory_stats", [] { getFooHostAllocator()->reset_accumulated_stats(); });
  m.def("_attach_out_of_memory_observer", [](py::object observer) {
    TORCH_CHECK_TYPE(PyCallable_Check(observer.ptr()), "_attach_out_of_memory_observer expects a callable");
    // Kept for the life of the process, as CUDA's observers are; the
    // allocator calls it without the GIL, so it takes the GIL to run.
    auto* kept = new py::object(std::move(observer));
    attach_out_of_memory_observer([kept](int64_t device, size_t requested, size_t total, size_t free) {
      py::gil_scoped_acquire gil;
      try {
        (*kept)(device, requested, total, free);
      } catch (py::error_already_set& e) {
        // The OutOfMemoryError is what the caller must see; a failing
        // observer is reported as unraisable, as Python does for callbacks.
        e.discard_as_unraisable("torch.foo out-of-memory observer");
      }
    });
  });
}

}  // namespace foo::python

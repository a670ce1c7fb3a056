// Stacks for the allocator's memory history without torch_python: the
// calling thread's Python frames, read through the Limited API when the
// allocation happens, and optionally its C++ frames (torch's
// CapturedTraceback, symbolized when a snapshot is taken).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>
#include <torch/csrc/profiler/combined_traceback.h>

namespace foo::limited {

struct StackFrame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};

struct GatheredStack : c10::GatheredContext {
  std::vector<StackFrame> python;  // innermost first
  std::shared_ptr<torch::CapturedTraceback> cpp;
};

// CreateContextFns for HistoryOptions::gather.
std::shared_ptr<c10::GatheredContext> gather_python_stack();
std::shared_ptr<c10::GatheredContext> gather_python_and_cpp_stack();

}  // namespace foo::limited

// The state of one stream capture (foo_sim/foo_graph.h describes the
// semantics). Streams and events point at it; the scheduler's mutex guards
// all of it, and the Scheduler members that drive it live in
// graph_capture.cpp.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "foo_sim/foo_graph.h"
#include "graph.h"

struct fooStream_st;

namespace foo_sim {

struct Capture {
  unsigned long long id = 0;
  fooStreamCaptureMode mode = fooStreamCaptureModeGlobal;
  std::thread::id thread;             // the thread that began it
  fooStream_st* origin = nullptr;
  bool active = true;                 // false once ended: events recorded in it go stale
  bool invalidated = false;
  std::string reason;                 // why it was invalidated, for later errors
  std::shared_ptr<GraphData> graph;   // being built
  std::vector<fooStream_st*> streams; // by lane; [0] is the origin
};
using CapturePtr = std::shared_ptr<Capture>;

// The calling thread's capture interaction mode (default global).
fooStreamCaptureMode thread_capture_mode();
void set_thread_capture_mode(fooStreamCaptureMode mode);

// True if an unsafe call by the calling thread must fail because of `c`.
bool forbids_unsafe_calls(const Capture& c);

const char* capture_mode_name(fooStreamCaptureMode mode);

// Adds `more` to the sorted set `into`.
void merge_frontier(std::vector<NodeId>& into, const std::vector<NodeId>& more);

}  // namespace foo_sim

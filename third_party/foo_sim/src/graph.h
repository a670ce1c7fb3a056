// A captured graph (nodes, the stream each was captured on, dependencies)
// and the replay plan an executable graph is made of. Plain data: the
// capture (graph_capture.h) builds it, the scheduler replays it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "foo_sim/foo_graph.h"
#include "profiler.h"

namespace foo_sim {

namespace race {
struct CapturedAccesses;  // race_detector.h
}

using NodeId = uint32_t;

struct GraphNode {
  // A user kernel is fn(data); runtime work (copies, memsets) is a closure,
  // kept here because it must run again on every replay.
  fooHostFn_t fn = nullptr;
  void* data = nullptr;
  std::function<void()> work;
  // fooLaunchHostFuncOwnedWithPrefetch's: what holds `data`, and the hint
  // a replay calls ahead of the node (may be null).
  std::shared_ptr<void> owned;
  fooHostFnPrefetch_t prefetch = nullptr;
  // What the profiler and the dump call it (a name that lives as long as
  // the process: fooLaunchKernel's, or the runtime's for copies).
  fooActivityKind kind = fooActivityKindKernel;
  const char* name = nullptr;
  uint64_t bytes = 0;
  fooMemcpyKind memcpy_kind = fooMemcpyDefault;
  int lane = 0;               // the capturing stream it was queued on (index)
  std::vector<NodeId> deps;   // nodes that must complete before it runs
  // What it reads and writes, when it was captured with the race detector on.
  std::shared_ptr<const race::CapturedAccesses> race_accesses;
};

struct GraphData {
  int device = 0;
  unsigned long long capture_id = 0;
  std::vector<GraphNode> nodes;             // in capture order
  std::vector<const void*> lane_streams;    // stream handles, lane 0 = origin
  std::vector<NodeId> sinks;                // what the origin stream ended on
};
using GraphDataPtr = std::shared_ptr<const GraphData>;

// One step of a lane's share of a replay, run in order on that lane.
struct ReplayStep {
  enum class Kind { Run, Signal, Await };
  Kind kind = Kind::Run;
  NodeId node = 0;  // Run: the first node; Signal: completed node; Await: awaited node
  // Run: the nodes run one after another by one command, `node` first.
  // Consecutive nodes of a lane with no signal or await between them run as
  // one batch, so a long captured chain costs the scheduler one pick, not
  // one per node: that is most of what a replay saves.
  std::vector<NodeId> batch;
};

// How a graph replays: one step list per lane. Lane 0 runs on the launching
// stream; the others on streams the executable graph owns. Every lane but
// the first starts after the launching stream's earlier work, and lane 0
// ends after all the graph's sinks (so work after the launch waits for the
// whole replay).
struct ReplayPlan {
  std::vector<std::vector<ReplayStep>> lanes;
  std::vector<bool> signalled;  // by node: some other lane awaits it
};

ReplayPlan make_replay_plan(const GraphData& g);

// Every node from which `from` can be reached (including `from`).
std::vector<bool> ancestors(const GraphData& g, const std::vector<NodeId>& from);

// Graphviz DOT text describing the graph.
std::string graph_to_dot(const GraphData& g);

}  // namespace foo_sim

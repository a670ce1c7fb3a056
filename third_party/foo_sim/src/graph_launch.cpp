// Graph replay: the Scheduler members that queue one replay of an
// executable graph as ordinary commands (kernels, records, waits) on the
// launching stream and on the graph's own lane streams, so the executors
// run it like any other work, branches concurrently.
#include <algorithm>
#include <exception>

#include "error.h"
#include "race_detector.h"
#include "scheduler.h"

namespace foo_sim {
namespace {

// Runs a captured closure node; the command's keep_alive holds its graph.
void run_work(void* node) { static_cast<const GraphNode*>(node)->work(); }

// Several nodes of one lane run by one command (see ReplayStep::batch).
struct Batch {
  GraphDataPtr graph;
  std::shared_ptr<const ReplayPlan> plan;  // owns `step`
  const ReplayStep* step = nullptr;
  fooStream_t stream = nullptr;            // for the profiler
  std::vector<ActivityStamp> stamps;       // one per node, while tracing
};

// How many nodes apart the prefetch stages are (foo_runtime.h): node i + 2k
// gets stage FOO_SIM_PREFETCH_STAGES - k before node i runs. A replayed
// small operator whose state is in the caches runs in about 0.2 us here,
// so the last stage comes about 0.4 us before its node runs, and the first
// about 1.2 us.
constexpr size_t kPrefetchSpacing = 2;
constexpr int kPrefetchStages = FOO_SIM_PREFETCH_STAGES;

void prefetch_stage(const Batch& b, size_t at, int stage) {
  if (at >= b.step->batch.size()) return;
  const GraphNode& node = b.graph->nodes[b.step->batch[at]];
  if (!node.prefetch) return;
  try {
    node.prefetch(node.data, stage);
  } catch (...) {
    // Only a hint, which must not throw: the nodes still run.
  }
}

// Before node i runs: the stages of the nodes ahead of it. At the batch's
// start, also the stages that no node before would have called, stage by
// stage (so each stage's misses overlap across nodes).
void prefetch_ahead(const Batch& b, size_t i) {
  if (i == 0) {
    for (int stage = 0; stage < kPrefetchStages; ++stage) {
      for (size_t at = 0; at < kPrefetchSpacing * static_cast<size_t>(kPrefetchStages - stage); ++at) {
        prefetch_stage(b, at, stage);
      }
    }
  }
  for (int stage = 0; stage < kPrefetchStages; ++stage) {
    prefetch_stage(b, i + kPrefetchSpacing * static_cast<size_t>(kPrefetchStages - stage), stage);
  }
}

// Each node fails or throws on its own, as a kernel would: the first failure
// is the batch's, and the nodes after it still run (as a stream's kernels
// after a failed one do).
void run_batch(void* p) {
  const auto* b = static_cast<const Batch*>(p);
  for (size_t i = 0; i < b->step->batch.size(); ++i) {
    const GraphNode& node = b->graph->nodes[b->step->batch[i]];
    prefetch_ahead(*b, i);
    int64_t start_ns = b->stamps.empty() ? 0 : profiler::now_ns();
    try {
      if (node.fn) {
        node.fn(node.data);
      } else {
        node.work();
      }
    } catch (const std::exception& e) {
      Scheduler::report_kernel_error(e.what());
    } catch (...) {
      Scheduler::report_kernel_error("kernel threw an unknown exception");
    }
    if (!b->stamps.empty()) profiler::record(b->stamps[i], b->graph->device, b->stream, start_ns, profiler::now_ns());
  }
}

// What the profiler calls a node: the name it was captured with.
ActivityStamp stamp_for(const GraphNode& node) {
  ActivityStamp st;
  st.kind = node.kind;
  st.name = node.name;
  st.bytes = node.bytes;
  st.memcpy_kind = node.memcpy_kind;
  return st;
}

}  // namespace

std::vector<Stream*> Scheduler::create_lanes(int device, size_t count) {
  std::vector<Stream*> lanes;
  Lock lock(mutex_);
  for (size_t i = 0; i < count; ++i) {
    auto* s = new Stream();
    s->device = devices_[device].get();
    // Listed with the device's streams, so device synchronization and
    // fooFree wait for replays; not in live_streams_, so no user call can
    // name one.
    s->device->streams.push_back(s);
    lanes.push_back(s);
  }
  return lanes;
}

void Scheduler::release_lanes(const std::vector<Stream*>& lanes) {
  Lock lock(mutex_);
  for (Stream* s : lanes) {
    s->destroyed = true;
    if (idle(s)) on_idle(s);
  }
}

fooError_t Scheduler::launch_graph(Stream* s, const GraphDataPtr& graph, const std::shared_ptr<const ReplayPlan>& plan,
                                   const std::vector<Stream*>& lanes, MarkerPtr* previous,
                                   race::ReplayClock* race_previous) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooGraphLaunch")) return e;
  if (s->capture) return capture_conflict(*s->capture, "fooGraphLaunch on a capturing stream");
  if (s->device->index != graph->device) {
    return fail(fooErrorInvalidValue,
                format("fooGraphLaunch: the graph was captured on foo device %d but stream %p belongs to foo device %d",
                       graph->device, static_cast<void*>(s), s->device->index));
  }
  if (race::on()) {
    if (fooError_t e = race::on_replay(s, *graph, race_previous)) return e;
  }
  auto command = [](Command::Kind kind, MarkerPtr m) {
    Command c;
    c.kind = kind;
    c.marker = std::move(m);
    return c;
  };
  // Replays of one executable graph run one after another, whatever streams
  // they are launched on (its lanes are shared between them).
  if (*previous && !(*previous)->done) push(s, command(Command::Kind::Wait, *previous));
  std::vector<MarkerPtr> signals(graph->nodes.size());
  for (size_t n = 0; n < signals.size(); ++n) {
    if (plan->signalled[n]) signals[n] = std::make_shared<Marker>();
  }
  // The other lanes start after everything queued on `s` before the launch.
  if (plan->lanes.size() > 1) {
    auto start = std::make_shared<Marker>();
    push(s, command(Command::Kind::Record, start));
    for (size_t l = 1; l < plan->lanes.size(); ++l) {
      lanes[l - 1]->priority = s->priority;
      push(lanes[l - 1], command(Command::Kind::Wait, start));
    }
  }
  // Markers exist before any step is queued, so a lane may await one whose
  // signal another lane has not queued yet.
  std::shared_ptr<const void> keep_alive = graph;
  for (size_t l = 0; l < plan->lanes.size(); ++l) {
    Stream* lane = l == 0 ? s : lanes[l - 1];
    for (const ReplayStep& step : plan->lanes[l]) {
      if (step.kind == ReplayStep::Kind::Signal) {
        push(lane, command(Command::Kind::Record, signals[step.node]));
      } else if (step.kind == ReplayStep::Kind::Await) {
        push(lane, command(Command::Kind::Wait, signals[step.node]));
      } else if (step.batch.size() == 1) {
        const GraphNode& node = graph->nodes[step.node];
        Command c;
        c.kind = Command::Kind::Kernel;
        c.fn = node.fn ? node.fn : &run_work;
        c.data = node.fn ? node.data : const_cast<GraphNode*>(&node);
        c.keep_alive = keep_alive;
        c.stamp = stamp_for(node);  // push() completes it while tracing
        push(lane, std::move(c));
      } else {
        auto batch = std::make_shared<Batch>();
        batch->graph = graph;
        batch->plan = plan;
        batch->step = &step;
        batch->stream = lane;
        if (profiler::tracing()) {
          for (NodeId n : step.batch) {
            batch->stamps.push_back(stamp_for(graph->nodes[n]));
            profiler::stamp(batch->stamps.back());
          }
        }
        Command c;
        c.kind = Command::Kind::Kernel;
        c.fn = &run_batch;
        c.data = batch.get();
        c.keep_alive = std::move(batch);
        c.self_traced = true;  // run_batch records its nodes one by one
        push(lane, std::move(c));
      }
    }
  }
  auto end = std::make_shared<Marker>();
  push(s, command(Command::Kind::Record, end));
  *previous = end;
  if (config_.launch_blocking) {
    host_wait(lock, false, [&end] { return end->done; }, s, nullptr);
    return report(s->pending_error);
  }
  return fooSuccess;
}

}  // namespace foo_sim

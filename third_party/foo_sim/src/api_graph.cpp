// C API: stream capture, graphs and executable graphs (foo_sim/foo_graph.h).
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "error.h"
#include "runtime.h"

using foo_sim::fail;
using foo_sim::format;
using foo_sim::Runtime;

struct fooGraph_st {
  foo_sim::GraphDataPtr data;
};

struct fooGraphExec_st {
  foo_sim::GraphDataPtr graph;
  std::shared_ptr<const foo_sim::ReplayPlan> plan;
  std::vector<foo_sim::Stream*> lanes;  // lanes 1.. of the plan
  foo_sim::MarkerPtr previous;          // end of the last replay; the scheduler's mutex guards it
  foo_sim::race::ReplayClock race_previous;  // the race detector's view of it; its mutex guards it
  foo_sim::Scheduler* scheduler = nullptr;
  // The last owner may be a launch still in progress on another thread:
  // the lanes go only then, and only once their queued work has run.
  ~fooGraphExec_st() { scheduler->release_lanes(lanes); }
};

namespace {

// Handles in use, so a stale or foreign one is an error, not a crash. The
// shared pointers let a launch finish while another thread destroys.
struct Registry {
  std::mutex mutex;
  std::unordered_map<fooGraph_t, std::shared_ptr<fooGraph_st>> graphs;
  std::unordered_map<fooGraphExec_t, std::shared_ptr<fooGraphExec_st>> execs;
};

Registry& registry() {
  // Leaked on purpose, as the runtime is: replays may outlive static destruction.
  static Registry* r = new Registry();
  return *r;
}

fooError_t find_graph(fooGraph_t graph, const char* what, std::shared_ptr<fooGraph_st>* out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.graphs.find(graph);
  if (it == r.graphs.end()) {
    return fail(fooErrorInvalidResourceHandle,
                format("%s: graph %p is not a live foo graph (destroyed, or never made)", what, static_cast<void*>(graph)));
  }
  *out = it->second;
  return fooSuccess;
}

fooError_t check_mode(fooStreamCaptureMode mode, const char* what) {
  if (mode == fooStreamCaptureModeGlobal || mode == fooStreamCaptureModeThreadLocal ||
      mode == fooStreamCaptureModeRelaxed) {
    return fooSuccess;
  }
  return fail(fooErrorInvalidValue, format("%s: unknown capture mode %d", what, static_cast<int>(mode)));
}

}  // namespace

extern "C" {

fooError_t fooStreamBeginCapture(fooStream_t stream, fooStreamCaptureMode mode) {
  if (fooError_t e = check_mode(mode, "fooStreamBeginCapture")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().begin_capture(rt->resolve(stream), mode);
}

fooError_t fooStreamEndCapture(fooStream_t stream, fooGraph_t* graph) {
  if (graph == nullptr) return fail(fooErrorInvalidValue, "fooStreamEndCapture: graph is NULL");
  *graph = nullptr;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  foo_sim::GraphDataPtr data;
  if (fooError_t e = rt->scheduler().end_capture(rt->resolve(stream), &data)) return e;
  auto g = std::make_shared<fooGraph_st>(fooGraph_st{std::move(data)});
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.graphs.emplace(g.get(), g);
  *graph = g.get();
  return fooSuccess;
}

fooError_t fooStreamIsCapturing(fooStream_t stream, fooStreamCaptureStatus* status) {
  return fooStreamGetCaptureInfo(stream, status, nullptr);
}

fooError_t fooStreamGetCaptureInfo(fooStream_t stream, fooStreamCaptureStatus* status, unsigned long long* id) {
  if (status == nullptr) return fail(fooErrorInvalidValue, "fooStreamGetCaptureInfo: status is NULL");
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  return rt->scheduler().capture_info(rt->resolve(stream), status, id);
}

fooError_t fooThreadExchangeStreamCaptureMode(fooStreamCaptureMode* mode) {
  if (mode == nullptr) return fail(fooErrorInvalidValue, "fooThreadExchangeStreamCaptureMode: mode is NULL");
  if (fooError_t e = check_mode(*mode, "fooThreadExchangeStreamCaptureMode")) return e;
  fooStreamCaptureMode previous = foo_sim::thread_capture_mode();
  foo_sim::set_thread_capture_mode(*mode);
  *mode = previous;
  return fooSuccess;
}

fooError_t fooGraphDestroy(fooGraph_t graph) {
  // Released after the registry's lock: its nodes may own user data whose
  // release calls foo.
  std::shared_ptr<fooGraph_st> g;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.graphs.find(graph);
  if (it == r.graphs.end()) {
    return fail(fooErrorInvalidResourceHandle,
                format("fooGraphDestroy: graph %p is not a live foo graph", static_cast<void*>(graph)));
  }
  g = std::move(it->second);
  r.graphs.erase(it);
  return fooSuccess;
}

fooError_t fooGraphGetNodeCount(fooGraph_t graph, size_t* count) {
  if (count == nullptr) return fail(fooErrorInvalidValue, "fooGraphGetNodeCount: count is NULL");
  std::shared_ptr<fooGraph_st> g;
  if (fooError_t e = find_graph(graph, "fooGraphGetNodeCount", &g)) return e;
  *count = g->data->nodes.size();
  return fooSuccess;
}

fooError_t fooGraphGetDevice(fooGraph_t graph, int* device) {
  if (device == nullptr) return fail(fooErrorInvalidValue, "fooGraphGetDevice: device is NULL");
  std::shared_ptr<fooGraph_st> g;
  if (fooError_t e = find_graph(graph, "fooGraphGetDevice", &g)) return e;
  *device = g->data->device;
  return fooSuccess;
}

fooError_t fooGraphDebugDotPrint(fooGraph_t graph, const char* path, unsigned int flags) {
  if (path == nullptr) return fail(fooErrorInvalidValue, "fooGraphDebugDotPrint: path is NULL");
  if (flags != 0) return fail(fooErrorInvalidValue, format("fooGraphDebugDotPrint: flags must be 0, got 0x%x", flags));
  std::shared_ptr<fooGraph_st> g;
  if (fooError_t e = find_graph(graph, "fooGraphDebugDotPrint", &g)) return e;
  std::string text = foo_sim::graph_to_dot(*g->data);
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) return fail(fooErrorInvalidValue, format("fooGraphDebugDotPrint: cannot open '%s' for writing", path));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return fail(fooErrorInvalidValue, format("fooGraphDebugDotPrint: writing '%s' failed", path));
  return fooSuccess;
}

fooError_t fooGraphInstantiate(fooGraphExec_t* exec, fooGraph_t graph, unsigned long long flags) {
  if (exec == nullptr) return fail(fooErrorInvalidValue, "fooGraphInstantiate: exec is NULL");
  *exec = nullptr;
  if (flags != 0) return fail(fooErrorInvalidValue, format("fooGraphInstantiate: flags must be 0, got 0x%llx", flags));
  std::shared_ptr<fooGraph_st> g;
  if (fooError_t e = find_graph(graph, "fooGraphInstantiate", &g)) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  auto plan = std::make_shared<foo_sim::ReplayPlan>(foo_sim::make_replay_plan(*g->data));
  auto x = std::make_shared<fooGraphExec_st>();
  x->graph = g->data;
  x->scheduler = &rt->scheduler();
  x->lanes = rt->scheduler().create_lanes(g->data->device, plan->lanes.size() - 1);
  x->plan = std::move(plan);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.execs.emplace(x.get(), x);
  *exec = x.get();
  return fooSuccess;
}

fooError_t fooGraphLaunch(fooGraphExec_t exec, fooStream_t stream) {
  std::shared_ptr<fooGraphExec_st> x;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.execs.find(exec);
    if (it == r.execs.end()) {
      return fail(fooErrorInvalidResourceHandle,
                  format("fooGraphLaunch: executable graph %p is not live (destroyed, or never instantiated)",
                         static_cast<void*>(exec)));
    }
    x = it->second;
  }
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (rt->config().launch_blocking) {
    if (fooError_t e = Runtime::check_may_block("fooGraphLaunch with FOO_SIM_LAUNCH_BLOCKING=1")) return e;
  }
  return rt->scheduler().launch_graph(rt->resolve(stream), x->graph, x->plan, x->lanes, &x->previous, &x->race_previous);
}

fooError_t fooGraphExecDestroy(fooGraphExec_t exec) {
  std::shared_ptr<fooGraphExec_st> x;  // released after the registry's lock
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.execs.find(exec);
  if (it == r.execs.end()) {
    return fail(fooErrorInvalidResourceHandle,
                format("fooGraphExecDestroy: executable graph %p is not live", static_cast<void*>(exec)));
  }
  x = std::move(it->second);
  r.execs.erase(it);
  return fooSuccess;
}

}  // extern "C"

// Stream capture: the Scheduler members that begin and end captures, turn
// launches, records and waits on capturing streams into graph nodes and
// dependencies, and refuse what a capture cannot allow. All run with the
// scheduler's mutex held (the public ones take it).
#include "graph_capture.h"

#include <algorithm>

#include "error.h"
#include "race_detector.h"
#include "scheduler.h"

namespace foo_sim {
namespace {

thread_local fooStreamCaptureMode t_capture_mode = fooStreamCaptureModeGlobal;

}  // namespace

fooStreamCaptureMode thread_capture_mode() { return t_capture_mode; }
void set_thread_capture_mode(fooStreamCaptureMode mode) { t_capture_mode = mode; }

bool forbids_unsafe_calls(const Capture& c) {
  if (!c.active || t_capture_mode == fooStreamCaptureModeRelaxed) return false;
  bool own = c.thread == std::this_thread::get_id();
  if (own) return c.mode != fooStreamCaptureModeRelaxed;
  return t_capture_mode == fooStreamCaptureModeGlobal && c.mode == fooStreamCaptureModeGlobal;
}

const char* capture_mode_name(fooStreamCaptureMode mode) {
  switch (mode) {
    case fooStreamCaptureModeGlobal: return "global";
    case fooStreamCaptureModeThreadLocal: return "thread-local";
    case fooStreamCaptureModeRelaxed: return "relaxed";
  }
  return "unknown";
}

void merge_frontier(std::vector<NodeId>& into, const std::vector<NodeId>& more) {
  std::vector<NodeId> out;
  std::set_union(into.begin(), into.end(), more.begin(), more.end(), std::back_inserter(out));
  into.swap(out);
}

// ------------------------------------------------------------ public entries

fooError_t Scheduler::begin_capture(Stream* s, fooStreamCaptureMode mode) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooStreamBeginCapture")) return e;
  if (s->capture) {
    return fail(fooErrorIllegalState,
                format("fooStreamBeginCapture: stream %p already takes part in capture %llu", static_cast<void*>(s),
                       s->capture->id));
  }
  auto c = std::make_shared<Capture>();
  c->id = next_capture_id_++;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->graph = std::make_shared<GraphData>();
  c->graph->device = s->device->index;
  c->graph->capture_id = c->id;
  c->graph->lane_streams.push_back(s);
  c->streams.push_back(s);
  s->capture = c;
  s->capture_lane = 0;
  s->frontier.clear();
  captures_.push_back(std::move(c));
  capture_count_.store(captures_.size(), std::memory_order_release);
  return fooSuccess;
}

fooError_t Scheduler::end_capture(Stream* s, GraphDataPtr* graph) {
  // A failed capture's graph goes with it, and its nodes may own user data
  // whose release calls foo: keep it until the mutex is released.
  CapturePtr keep;
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooStreamEndCapture")) return e;
  if (!s->capture) {
    return fail(fooErrorStreamCaptureUnmatched,
                format("fooStreamEndCapture: stream %p is not capturing", static_cast<void*>(s)));
  }
  keep = s->capture;
  Capture& c = *s->capture;
  if (c.origin != s) {
    return fail(fooErrorStreamCaptureUnmatched,
                format("fooStreamEndCapture: stream %p only joined capture %llu; end it on stream %p, where it began",
                       static_cast<void*>(s), c.id, static_cast<void*>(c.origin)));
  }
  if (c.mode != fooStreamCaptureModeRelaxed && c.thread != std::this_thread::get_id()) {
    return fail(fooErrorStreamCaptureWrongThread,
                format("fooStreamEndCapture: capture %llu was begun in %s mode by another thread, which must end it",
                       c.id, capture_mode_name(c.mode)));
  }
  fooError_t result = fooSuccess;
  if (c.invalidated) {
    result = fail(fooErrorStreamCaptureInvalidated,
                  format("fooStreamEndCapture: capture %llu was invalidated: %s", c.id, c.reason.c_str()));
  } else {
    // Every forked stream's last work must be something the origin's end
    // depends on, or the replay could not tell when the graph is done.
    std::vector<bool> joined = ancestors(*c.graph, s->frontier);
    for (size_t lane = 1; lane < c.streams.size() && result == fooSuccess; ++lane) {
      for (NodeId n : c.streams[lane]->frontier) {
        if (joined[n]) continue;
        result = fail(fooErrorStreamCaptureUnjoined,
                      format("fooStreamEndCapture: stream %p joined capture %llu but was not joined back: the origin "
                             "stream %p must wait on an event recorded on it after its last work (node %u)",
                             static_cast<void*>(c.streams[lane]), c.id, static_cast<void*>(s), n));
        break;
      }
    }
  }
  if (result == fooSuccess) {
    c.graph->sinks = s->frontier;
    *graph = c.graph;
  }
  end_capture_locked(c);
  return result;
}

fooError_t Scheduler::capture_info(Stream* s, fooStreamCaptureStatus* status, unsigned long long* id) {
  Lock lock(mutex_);
  if (fooError_t e = check_stream(s, "fooStreamGetCaptureInfo")) return e;
  if (!s->capture) {
    *status = fooStreamCaptureStatusNone;
    if (id) *id = 0;
  } else {
    *status = s->capture->invalidated ? fooStreamCaptureStatusInvalidated : fooStreamCaptureStatusActive;
    if (id) *id = s->capture->id;
  }
  return fooSuccess;
}

fooError_t Scheduler::check_unsafe_call(const char* what) {
  // A capture begun after this read begins after the call, as it would
  // after the mutex.
  if (capture_count_.load(std::memory_order_acquire) == 0) return fooSuccess;
  Lock lock(mutex_);
  return unsafe_call_locked(what);
}

// --------------------------------------------------------------- under lock

fooError_t Scheduler::unsafe_call_locked(const char* what) {
  if (captures_.empty()) return fooSuccess;
  const Capture* culprit = nullptr;
  for (const CapturePtr& c : captures_) {
    if (!forbids_unsafe_calls(*c)) continue;
    if (!c->invalidated) {
      c->invalidated = true;
      c->reason = format("%s was called during the capture", what);
    }
    if (!culprit) culprit = c.get();
  }
  if (!culprit) return fooSuccess;
  bool own = culprit->thread == std::this_thread::get_id();
  return fail(fooErrorStreamCaptureUnsupported,
              format("%s is not permitted while %s capture %llu is under way on stream %p (the calling thread is in "
                     "%s capture mode); the capture is invalidated. Make such calls before or after the capture, or "
                     "switch the thread to relaxed mode with fooThreadExchangeStreamCaptureMode",
                     what, own ? "this thread's" : "another thread's global", culprit->id,
                     static_cast<void*>(culprit->origin), capture_mode_name(t_capture_mode)));
}

fooError_t Scheduler::capture_conflict(Capture& c, const std::string& what) {
  if (!c.invalidated) {
    c.invalidated = true;
    c.reason = what + " was attempted";
  }
  return fail(fooErrorStreamCaptureUnsupported,
              format("%s is not permitted during stream capture (capture %llu, begun on stream %p); the capture is "
                     "invalidated and must be ended",
                     what.c_str(), c.id, static_cast<void*>(c.origin)));
}

fooError_t Scheduler::conflict_on_device(const Device* d, const char* what) {
  fooError_t result = fooSuccess;
  for (const CapturePtr& c : captures_) {
    if (c->graph->device != d->index) continue;
    fooError_t e = capture_conflict(*c, what);
    if (result == fooSuccess) result = e;
  }
  return result;
}

fooError_t Scheduler::capture_node(Stream* s, GraphNode& node, const char* what) {
  Capture& c = *s->capture;
  if (c.invalidated) {
    return fail(fooErrorStreamCaptureInvalidated,
                format("%s: capture %llu, which this stream takes part in, was invalidated (%s); end it with "
                       "fooStreamEndCapture on stream %p",
                       what, c.id, c.reason.c_str(), static_cast<void*>(c.origin)));
  }
  profiler::current_label(&node.kind, &node.name, &node.bytes, &node.memcpy_kind);
  if (race::on()) node.race_accesses = race::take_captured(s);
  node.lane = s->capture_lane;
  node.deps = s->frontier;
  auto id = static_cast<NodeId>(c.graph->nodes.size());
  c.graph->nodes.push_back(std::move(node));
  s->frontier.assign(1, id);
  return fooSuccess;
}

fooError_t Scheduler::capture_record(Event* e, Stream* s) {
  Capture& c = *s->capture;
  if (c.invalidated) {
    return fail(fooErrorStreamCaptureInvalidated,
                format("fooEventRecord: capture %llu, which this stream takes part in, was invalidated (%s)", c.id,
                       c.reason.c_str()));
  }
  // No node: the event now names the captured work so far, for waits.
  e->captured_in = s->capture;
  e->captured_frontier = s->frontier;
  return fooSuccess;
}

fooError_t Scheduler::capture_wait(Stream* s, Event* e, const CapturePtr& from, bool* handled) {
  if (!from && !s->capture) return fooSuccess;  // an ordinary wait
  *handled = true;
  if (!from) {
    // A capturing stream waiting on work outside the capture: the graph
    // could not replay that dependency. An event never recorded is no
    // dependency at all, as outside a capture.
    if (!e->latest) return fooSuccess;
    Capture& c = *s->capture;
    if (!c.invalidated) {
      c.invalidated = true;
      c.reason = "a capturing stream waited on an event recorded outside the capture";
    }
    return fail(fooErrorStreamCaptureIsolation,
                format("fooStreamWaitEvent: stream %p is capturing (capture %llu) but event %p was last recorded "
                       "outside the capture; the capture is invalidated",
                       static_cast<void*>(s), c.id, static_cast<void*>(e)));
  }
  if (s->capture && s->capture != from) {
    Capture& c = *s->capture;
    if (!c.invalidated) {
      c.invalidated = true;
      c.reason = "a capturing stream waited on an event of another capture";
    }
    return fail(fooErrorStreamCaptureIsolation,
                format("fooStreamWaitEvent: stream %p takes part in capture %llu but event %p was recorded in capture "
                       "%llu; two captures cannot be merged",
                       static_cast<void*>(s), c.id, static_cast<void*>(e), from->id));
  }
  if (from->invalidated) {
    return fail(fooErrorStreamCaptureInvalidated,
                format("fooStreamWaitEvent: event %p was recorded in capture %llu, which was invalidated (%s)",
                       static_cast<void*>(e), from->id, from->reason.c_str()));
  }
  if (s->device->index != from->graph->device) {
    return fail(fooErrorStreamCaptureIsolation,
                format("fooStreamWaitEvent: stream %p is on foo device %d but capture %llu on foo device %d; a graph "
                       "belongs to one device",
                       static_cast<void*>(s), s->device->index, from->id, from->graph->device));
  }
  if (!s->capture) {
    // A fork: the stream joins the capture; its earlier queued work is not
    // part of the graph and still runs.
    s->capture = from;
    s->capture_lane = static_cast<int>(from->streams.size());
    s->frontier.clear();
    from->streams.push_back(s);
    from->graph->lane_streams.push_back(s);
  }
  merge_frontier(s->frontier, e->captured_frontier);
  return fooSuccess;
}

void Scheduler::end_capture_locked(Capture& c) {
  for (Stream* t : c.streams) {
    t->capture.reset();
    t->capture_lane = 0;
    t->frontier.clear();
  }
  c.active = false;
  c.streams.clear();
  captures_.erase(std::remove_if(captures_.begin(), captures_.end(),
                                 [&c](const CapturePtr& p) { return p.get() == &c; }),
                  captures_.end());
  capture_count_.store(captures_.size(), std::memory_order_release);
}

CapturePtr Scheduler::live_capture_of(const Event* e) {
  CapturePtr c = e->captured_in.lock();
  return c && c->active ? c : nullptr;
}

}  // namespace foo_sim

#include "race_detector.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "graph.h"
#include "race_clock.h"
#include "race_shadow.h"
#include "race_state.h"
#include "scheduler.h"

namespace foo_sim::race {

std::atomic<int> g_mode{fooRaceModeOff};

namespace {

// What the calling thread declared for its next launch.
struct Declared {
  struct Range {
    uintptr_t begin, end;
    bool write;
    std::string what;
  };
  std::vector<Range> ranges;
  struct Allocation {
    uintptr_t begin, end;
    const void* stream;
  };
  std::vector<Allocation> allocations;
  std::string op;    // a copy's own name, when no operator declared
  // (first range, operation, site) per declaring call: the innermost one
  // still standing names the launch.
  struct Name {
    size_t first;
    std::string op, site;
  };
  std::vector<Name> names;
  uint64_t generation = 0;  // of the detector state they were declared in
};
thread_local Declared t_declared;
thread_local unsigned long long t_launches = 0;  // launches that took declarations
// Raise mode: a host-side race not yet returned by a launch or sync.
thread_local std::string t_deferred;
thread_local uint64_t t_deferred_generation = 0;

const char* or_empty(const std::string& s) { return s.c_str(); }

std::string describe_side(const AccessInfo& a) {
  std::string out = (a.write ? "write by " : "read by ") + (a.op.empty() ? std::string("a kernel") : a.op);
  if (!a.what.empty()) out += " (" + a.what + ")";
  if (a.stream < 0) out += " on the host";
  else out += format(" on foo:%d %s (stream %d)", a.device, a.is_default ? "default stream" : "stream", a.stream);
  if (!a.site.empty()) out += ", at " + a.site;
  return out;
}

}  // namespace

State& state() {
  static State* s = new State();  // never destroyed: executors may outlive static destruction
  return *s;
}

std::string State::message_for(const Report& r) {
  std::string m = format("race on %zu bytes at %p: ", r.bytes, reinterpret_cast<const void*>(r.address));
  m += describe_side(*r.first) + ", then " + describe_side(*r.second) + ". ";
  switch (r.kind) {
    case fooRaceKindUseAfterFree:
      m += "The memory was freed and reused after the first access without waiting for it.";
      break;
    case fooRaceKindHost:
      m += "The host and the stream are not synchronized between the two.";
      break;
    default:
      m += "Nothing orders the second after the first (no event recorded after the first and waited on before the "
           "second, no host synchronization).";
  }
  return m;
}

void State::reset() {
  ++generation;
  published_generation.store(generation, std::memory_order_release);
  new_reports.clear();
  last_raised.clear();
  streams.clear();
  host = VectorClock();
  host_version = 1;
  shadow.clear();
  reports.clear();
  report_index.clear();
}

int State::stream_number(fooStream_st* s) {
  if (s->race_generation != generation || s->race_index < 0) {
    s->race_generation = generation;
    s->race_index = static_cast<int>(streams.size());
    StreamState st;
    st.device = s->device->index;
    st.is_default = s->is_default;
    streams.push_back(std::move(st));
  }
  StreamState& st = streams[s->race_index];
  if (st.host_seen != host_version) {
    st.clock.join(host);
    st.host_seen = host_version;
  }
  return s->race_index;
}

void State::host_join(const VectorClock& c) {
  host.join(c);
  ++host_version;
}

// The reports of one launch: its accesses that race with one earlier
// access (the runs of bytes of a strided view, or two tensors of one
// operator against the same earlier operator) make one race of that
// launch, counted once.
class LaunchReports {
 public:
  explicit LaunchReports(State& st) : st_(st) {}
  size_t add(fooRaceKind kind, const Conflict& c, const AccessInfoPtr& second) {
    size_t index = st_.add_report(kind, c, second);
    if (std::find(seen_.begin(), seen_.end(), index) != seen_.end()) {
      --st_.reports[index].count;
    } else {
      seen_.push_back(index);
    }
    return index;
  }

 private:
  State& st_;
  std::vector<size_t> seen_;
};

size_t State::add_report(fooRaceKind kind, const Conflict& c, const AccessInfoPtr& second) {
  std::string key = c.earlier.info->op + '\x1f' + c.earlier.info->site + '\x1f' + (c.earlier.info->write ? "w" : "r") +
                    '\x1f' + second->op + '\x1f' + second->site + '\x1f' + (second->write ? "w" : "r");
  auto it = report_index.find(key);
  if (it != report_index.end()) {
    ++reports[it->second].count;
    return it->second;
  }
  Report r;
  r.kind = kind;
  r.first = c.earlier.info;
  r.second = second;
  r.address = c.address;
  r.bytes = c.bytes;
  r.message = message_for(r);
  reports.push_back(std::move(r));
  size_t index = reports.size() - 1;
  report_index.emplace(std::move(key), index);
  new_reports[std::this_thread::get_id()].push_back(index);
  return index;
}

void State::fill(const Report& r, fooRaceReport* out) {
  auto side = [](const AccessInfo& a) {
    return fooRaceSide{or_empty(a.op), or_empty(a.what), or_empty(a.site), a.write ? 1 : 0,
                       a.device, a.stream, a.is_default ? 1 : 0, static_cast<fooStream_t>(const_cast<void*>(a.handle))};
  };
  out->kind = r.kind;
  out->first = side(*r.first);
  out->second = side(*r.second);
  out->address = reinterpret_cast<const void*>(r.address);
  out->bytes = r.bytes;
  out->count = r.count;
  out->message = r.message.c_str();
}

void set_initial_mode(fooRaceMode mode) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().reset();
  g_mode.store(mode);
}

fooError_t on_launch(fooStream_st* s) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  Declared declared = std::move(t_declared);
  t_declared = Declared();
  ++t_launches;
  if (!t_deferred.empty() && t_deferred_generation == st.generation && g_mode.load() == fooRaceModeRaise) {
    std::string m = std::move(t_deferred);
    t_deferred.clear();
    return fail(fooErrorRaceDetected, m);
  }
  int n = st.stream_number(s);
  StreamState& ss = st.streams[n];
  uint64_t epoch = ss.clock.get(n) + 1;
  if (declared.generation != st.generation) return (ss.clock.tick(n), fooSuccess);

  std::string op = declared.names.empty() ? declared.op : declared.names.back().op;
  std::string site = declared.names.empty() ? std::string() : declared.names.back().site;
  auto info_for = [&](const std::string& what, bool write) {
    auto info = std::make_shared<AccessInfo>();
    info->op = op;
    info->what = what;
    info->site = site;
    info->write = write;
    info->device = ss.device;
    info->stream = n;
    info->is_default = ss.is_default;
    info->handle = s;
    return info;
  };
  // The allocator's hand-overs to this stream are writes by this launch.
  for (const auto& a : declared.allocations) {
    if (a.stream == s) declared.ranges.push_back({a.begin, a.end, true, "newly allocated memory"});
  }
  // Nested operators declare the same tensors again: one access per range
  // (a write if any declaration writes), so that a race counts once.
  std::sort(declared.ranges.begin(), declared.ranges.end(), [](const Declared::Range& a, const Declared::Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : (a.end != b.end ? a.end < b.end : a.write > b.write);
  });
  declared.ranges.erase(std::unique(declared.ranges.begin(), declared.ranges.end(),
                                    [](const Declared::Range& a, const Declared::Range& b) {
                                      return a.begin == b.begin && a.end == b.end;
                                    }),
                        declared.ranges.end());
  // Check everything against the state before this launch, then record.
  bool raise = g_mode.load() == fooRaceModeRaise;
  LaunchReports counted(st);
  for (const auto& r : declared.ranges) {
    Conflict c;
    if (!st.shadow.find_conflict(r.begin, r.end, r.write, n, ss.clock, &c)) continue;
    fooRaceKind kind = c.freed_since ? fooRaceKindUseAfterFree : fooRaceKindUnordered;
    size_t index = counted.add(kind, c, info_for(r.what, r.write));
    if (raise) {
      st.last_raised[std::this_thread::get_id()] = index;
      return fail(fooErrorRaceDetected, st.reports[index].message);
    }
  }
  ss.clock.tick(n);
  for (int pass = 0; pass < 2; ++pass) {  // reads first: a write of the same launch replaces them
    for (const auto& r : declared.ranges) {
      if (r.write != (pass == 1)) continue;
      st.shadow.record(r.begin, r.end, Access{n, epoch, info_for(r.what, r.write)}, r.write);
    }
  }
  return fooSuccess;
}

struct CapturedAccesses {
  struct Range {
    uintptr_t begin, end;
    bool write;
    std::string what, op, site;  // the captured operator, and where the host was when it was captured
  };
  std::vector<Range> ranges;
};

std::shared_ptr<const CapturedAccesses> take_captured(const fooStream_st* s) {
  Declared declared = std::move(t_declared);
  t_declared = Declared();
  ++t_launches;  // taken: nested declarers' marks drop nothing more
  if (declared.generation != state().generation_snapshot()) return nullptr;
  // Memory the capture allocated for the launch (a functional operator's
  // output, from the graph's private pool) is written by every replay: a
  // read of it after a replay, not ordered after the replay, is a race.
  for (const auto& a : declared.allocations) {
    if (a.stream == s) declared.ranges.push_back({a.begin, a.end, true, "memory the capture allocated"});
  }
  if (declared.ranges.empty()) return nullptr;
  std::string op = declared.names.empty() ? declared.op : declared.names.back().op;
  std::string site = declared.names.empty() ? std::string() : declared.names.back().site;
  auto captured = std::make_shared<CapturedAccesses>();
  for (auto& r : declared.ranges) captured->ranges.push_back({r.begin, r.end, r.write, std::move(r.what), op, site});
  return captured;
}

fooError_t on_replay(fooStream_st* s, const GraphData& graph, ReplayClock* previous) {
  std::vector<const CapturedAccesses::Range*> ranges;
  for (const GraphNode& node : graph.nodes) {
    if (!node.race_accesses) continue;
    for (const auto& r : node.race_accesses->ranges) ranges.push_back(&r);
  }
  // One access per range, a write if any node writes it.
  std::sort(ranges.begin(), ranges.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : (a->end != b->end ? a->end < b->end : a->write > b->write);
  });
  ranges.erase(std::unique(ranges.begin(), ranges.end(),
                           [](const auto* a, const auto* b) { return a->begin == b->begin && a->end == b->end; }),
               ranges.end());
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  int n = st.stream_number(s);
  StreamState& ss = st.streams[n];
  if (previous->clock && previous->generation == st.generation) ss.clock.join(*previous->clock);
  uint64_t epoch = ss.clock.get(n) + 1;
  auto info_for = [&](const CapturedAccesses::Range& r) {
    auto info = std::make_shared<AccessInfo>();
    info->op = "graph replay: " + (r.op.empty() ? std::string("a kernel") : r.op);
    info->what = r.what;
    info->site = r.site.empty() ? std::string() : "captured at " + r.site;
    info->write = r.write;
    info->device = ss.device;
    info->stream = n;
    info->is_default = ss.is_default;
    info->handle = s;
    return info;
  };
  bool raise = g_mode.load() == fooRaceModeRaise;
  LaunchReports counted(st);
  for (const auto* r : ranges) {
    Conflict c;
    if (!st.shadow.find_conflict(r->begin, r->end, r->write, n, ss.clock, &c)) continue;
    size_t index = counted.add(c.freed_since ? fooRaceKindUseAfterFree : fooRaceKindUnordered, c, info_for(*r));
    if (raise) {
      st.last_raised[std::this_thread::get_id()] = index;
      return fail(fooErrorRaceDetected, st.reports[index].message);
    }
  }
  ss.clock.tick(n);
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto* r : ranges) {
      if (r->write == (pass == 1)) st.shadow.record(r->begin, r->end, Access{n, epoch, info_for(*r)}, r->write);
    }
  }
  previous->clock = std::make_shared<const VectorClock>(ss.clock);
  previous->generation = st.generation;
  return fooSuccess;
}

void on_record(fooEvent_st* e, fooStream_st* s) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  int n = st.stream_number(s);
  e->race_clock = std::make_shared<const VectorClock>(st.streams[n].clock);
  e->race_generation = st.generation;
}

void on_wait(fooStream_st* s, fooEvent_st* e) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  int n = st.stream_number(s);
  if (e->race_clock && e->race_generation == st.generation) st.streams[n].clock.join(*e->race_clock);
}

void on_host_waited_stream(fooStream_st* s) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  int n = st.stream_number(s);
  st.host_join(st.streams[n].clock);
}

void on_host_waited_event(fooEvent_st* e) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (e->race_clock && e->race_generation == st.generation) st.host_join(*e->race_clock);
}

void on_host_waited_device(const Device* d) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  for (fooStream_st* s : d->streams) {
    if (s->race_generation == st.generation && s->race_index >= 0) st.host_join(st.streams[s->race_index].clock);
  }
}

fooError_t take_deferred() {
  if (t_deferred.empty()) return fooSuccess;
  std::string m = std::move(t_deferred);
  t_deferred.clear();
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (t_deferred_generation != st.generation || g_mode.load() != fooRaceModeRaise) return fooSuccess;
  return fail(fooErrorRaceDetected, m);
}

struct ThreadDeclarations {
  Declared declared;
  unsigned long long launches = 0;
  std::string deferred;
  uint64_t deferred_generation = 0;
};

void ThreadDeclarationsDeleter::operator()(ThreadDeclarations* d) const { delete d; }

SavedDeclarations set_aside_thread_declarations() {
  SavedDeclarations saved(new ThreadDeclarations());
  saved->declared = std::exchange(t_declared, Declared());
  saved->launches = t_launches;
  saved->deferred = std::exchange(t_deferred, std::string());
  saved->deferred_generation = t_deferred_generation;
  return saved;
}

void restore_thread_declarations(SavedDeclarations saved) {
  t_declared = std::move(saved->declared);
  t_launches = saved->launches;
  t_deferred = std::move(saved->deferred);
  t_deferred_generation = saved->deferred_generation;
}

void declare_own(const void* ptr, size_t bytes, bool write, const char* op) {
  if (t_declared.generation != state().generation_snapshot()) {
    t_declared = Declared();
    t_declared.generation = state().generation_snapshot();
  }
  auto b = reinterpret_cast<uintptr_t>(ptr);
  t_declared.ranges.push_back({b, b + bytes, write, write ? "destination" : "source"});
  if (t_declared.op.empty()) t_declared.op = op;
}

void forget(const void* ptr, size_t bytes) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  auto b = reinterpret_cast<uintptr_t>(ptr);
  st.shadow.forget(b, b + bytes);
}

// ---- the C API's side (api_race.cpp calls these)

void declare(const fooRaceAccess* accesses, size_t count, const char* op, const char* site) {
  uint64_t g = state().generation_snapshot();
  if (t_declared.generation != g) {
    t_declared = Declared();
    t_declared.generation = g;
  }
  for (size_t i = 0; i < count; ++i) {
    auto b = reinterpret_cast<uintptr_t>(accesses[i].ptr);
    t_declared.ranges.push_back({b, b + accesses[i].bytes, accesses[i].write != 0,
                                 accesses[i].what ? accesses[i].what : ""});
  }
  t_declared.names.push_back({t_declared.ranges.size() - count, op ? op : "", site ? site : ""});
}

void clear_declared() {
  t_declared.ranges.clear();
  t_declared.names.clear();
  t_declared.op.clear();
}

fooRaceMark mark() { return fooRaceMark{t_launches, t_declared.ranges.size()}; }

void restore(fooRaceMark m) {
  if (m.launches != t_launches) {
    clear_declared();
  } else if (t_declared.ranges.size() > m.declared) {
    t_declared.ranges.resize(m.declared);
    while (!t_declared.names.empty() && t_declared.names.back().first >= m.declared) t_declared.names.pop_back();
  }
}

void declare_allocation(const void* ptr, size_t bytes, const void* stream) {
  uint64_t g = state().generation_snapshot();
  if (t_declared.generation != g) {
    t_declared = Declared();
    t_declared.generation = g;
  }
  auto b = reinterpret_cast<uintptr_t>(ptr);
  t_declared.allocations.push_back({b, b + bytes, stream});
}

void note_free(const void* ptr, size_t bytes) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  auto b = reinterpret_cast<uintptr_t>(ptr);
  st.shadow.note_free(b, b + bytes);
}

fooError_t host_access(const void* ptr, size_t bytes, bool write, const char* what, const char* op, const char* site) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  auto b = reinterpret_cast<uintptr_t>(ptr);
  Conflict c;
  if (!st.shadow.find_conflict(b, b + bytes, write, -1, st.host, &c)) return fooSuccess;
  auto info = std::make_shared<AccessInfo>();
  info->op = op ? op : "host";
  info->what = what ? what : "";
  info->site = site ? site : "";
  info->write = write;
  size_t index = st.add_report(fooRaceKindHost, c, info);
  if (g_mode.load() != fooRaceModeRaise) return fooSuccess;
  st.last_raised[std::this_thread::get_id()] = index;
  t_deferred = st.reports[index].message;
  t_deferred_generation = st.generation;
  return fail(fooErrorRaceDetected, st.reports[index].message);
}

}  // namespace foo_sim::race

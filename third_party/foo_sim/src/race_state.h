// The race detector's state, shared by race_detector.cpp (the hooks) and
// api_race.cpp (the C API). Everything is guarded by `mutex`.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "foo_sim/foo_race.h"
#include "race_clock.h"
#include "race_shadow.h"

struct fooStream_st;

namespace foo_sim::race {

struct StreamState {
  VectorClock clock;
  uint64_t host_seen = 0;  // the host clock version last joined
  int device = 0;
  bool is_default = false;
};

struct Report {
  fooRaceKind kind = fooRaceKindUnordered;
  AccessInfoPtr first, second;
  uintptr_t address = 0;
  size_t bytes = 0;
  unsigned long long count = 1;
  std::string message;
};

struct State {
  std::mutex mutex;
  // Bumped by every reset: streams, events and threads holding state from
  // an earlier generation start over.
  uint64_t generation = 1;
  std::atomic<uint64_t> published_generation{1};  // read without the mutex
  std::vector<StreamState> streams;                // by stream number
  VectorClock host;
  uint64_t host_version = 1;  // bumped when `host` changes
  ShadowMemory shadow;
  std::vector<Report> reports;
  std::unordered_map<std::string, size_t> report_index;  // by pair of sites
  std::map<std::thread::id, std::vector<size_t>> new_reports;  // not yet taken, by the thread that found them
  std::map<std::thread::id, size_t> last_raised;

  uint64_t generation_snapshot() const { return published_generation.load(std::memory_order_acquire); }
  void reset();
  // The stream's number, after joining the host clock into its clock.
  int stream_number(fooStream_st* s);
  void host_join(const VectorClock& c);
  // Records a race (or counts it again) and returns its index.
  size_t add_report(fooRaceKind kind, const Conflict& c, const AccessInfoPtr& second);
  static std::string message_for(const Report& r);
  static void fill(const Report& r, fooRaceReport* out);
};

State& state();

// The C API's operations (api_race.cpp).
void declare(const fooRaceAccess* accesses, size_t count, const char* op, const char* site);
void clear_declared();
fooRaceMark mark();
void restore(fooRaceMark m);
void declare_allocation(const void* ptr, size_t bytes, const void* stream);
void note_free(const void* ptr, size_t bytes);
fooError_t host_access(const void* ptr, size_t bytes, bool write, const char* what, const char* op, const char* site);

}  // namespace foo_sim::race

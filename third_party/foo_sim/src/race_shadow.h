// Shadow memory of the race detector: for every byte range that queued work
// touched, the last write and the reads since it, each with the launch
// (stream, epoch) that made it and what to say about it in a report.
//
// A range is one entry of an ordered map keyed by start address; entries
// never overlap. A write replaces everything in its range with one entry
// (the earlier accesses are either ordered before it, or reported), so a
// block that is freed and reused in order costs one entry again, and the
// state for a live allocation stays bounded by the distinct ranges its
// users touched. Reads keep one record per stream: a later read by the same
// stream is ordered after the earlier one, so it covers it. fooFree drops
// the ranges of the freed allocation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "race_clock.h"

namespace foo_sim::race {

// What a report says about one access; shared by every range it covers.
struct AccessInfo {
  std::string op;
  std::string what;
  std::string site;
  bool write = false;
  int device = -1;    // -1: the host
  int stream = -1;    // the detector's stream number; -1: the host
  bool is_default = false;
  const void* handle = nullptr;
};
using AccessInfoPtr = std::shared_ptr<const AccessInfo>;

struct Access {
  int stream = -1;
  uint64_t epoch = 0;
  AccessInfoPtr info;
};

// An earlier access that the new one is not ordered after.
struct Conflict {
  Access earlier;
  uintptr_t address = 0;  // first overlapping byte
  size_t bytes = 0;
  bool freed_since = false;  // the block was freed (fooRaceNoteFree) after it
};

class ShadowMemory {
 public:
  // The first earlier access in [begin, end) that conflicts with an access
  // (write or read) whose point in the order is `clock`, made by `stream`
  // (-1: the host, which is ordered with nothing but its clock). Returns
  // false if there is none.
  bool find_conflict(uintptr_t begin, uintptr_t end, bool write, int stream, const VectorClock& clock,
                     Conflict* out) const;
  // Records the access as the latest to [begin, end).
  void record(uintptr_t begin, uintptr_t end, const Access& access, bool write);
  // Marks the earlier accesses to [begin, end) as made before a free.
  void note_free(uintptr_t begin, uintptr_t end);
  // Forgets [begin, end).
  void forget(uintptr_t begin, uintptr_t end);
  void clear() { ranges_.clear(); }
  size_t range_count() const { return ranges_.size(); }

 private:
  struct Range {
    uintptr_t end = 0;
    bool has_write = false;
    Access last_write;
    std::vector<Access> reads;  // one per stream, since last_write
    bool freed = false;         // freed by an allocator after these accesses
  };
  using Map = std::map<uintptr_t, Range>;
  // Splits the range containing `at` (if any) so that one starts at `at`.
  void split(uintptr_t at);
  Map ranges_;
};

}  // namespace foo_sim::race

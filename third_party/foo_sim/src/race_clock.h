// Vector clocks for the race detector (race_detector.h has the design).
//
// Every stream the detector has seen has a number; a clock maps each number
// to the last of that stream's launches known to come before: clock[s] = n
// means "the first n launches of stream s happen before this point". A
// stream's own entry counts its launches, so the launch that makes it n
// has the epoch (s, n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace foo_sim::race {

class VectorClock {
 public:
  uint64_t get(size_t stream) const { return stream < entries_.size() ? entries_[stream] : 0; }
  // Counts one more launch of `stream` and returns its epoch.
  uint64_t tick(size_t stream) {
    grow(stream + 1);
    return ++entries_[stream];
  }
  // Everything `other` knows comes before is now known here too.
  void join(const VectorClock& other) {
    grow(other.entries_.size());
    for (size_t i = 0; i < other.entries_.size(); ++i) entries_[i] = std::max(entries_[i], other.entries_[i]);
  }
  // Whether the launch (stream, epoch) happens before this point.
  bool covers(size_t stream, uint64_t epoch) const { return epoch <= get(stream); }

 private:
  void grow(size_t n) {
    if (entries_.size() < n) entries_.resize(n, 0);
  }
  std::vector<uint64_t> entries_;
};

// What the detector knows of an executable graph's last replay: the clock
// of the stream that launched it, just after it. The next replay of the
// same executable graph runs after that one, whatever its stream (as
// cudaGraphLaunch orders launches of one graph), so it joins this clock.
struct ReplayClock {
  std::shared_ptr<const VectorClock> clock;
  uint64_t generation = 0;  // of the detector state it belongs to
};

}  // namespace foo_sim::race

#include "race_shadow.h"

#include <algorithm>

namespace foo_sim::race {
namespace {

// Whether `earlier` conflicts with an access by `stream` at `clock`: made by
// another agent and not known to come before.
bool unordered(const Access& earlier, int stream, const VectorClock& clock) {
  if (earlier.stream == stream) return false;  // program order of one stream
  return !clock.covers(static_cast<size_t>(earlier.stream), earlier.epoch);
}

}  // namespace

bool ShadowMemory::find_conflict(uintptr_t begin, uintptr_t end, bool write, int stream, const VectorClock& clock,
                                 Conflict* out) const {
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->first < end; ++it) {
    const Range& r = it->second;
    if (r.end <= begin) continue;
    const Access* hit = nullptr;
    if (r.has_write && unordered(r.last_write, stream, clock)) hit = &r.last_write;
    if (hit == nullptr && write) {
      for (const Access& read : r.reads) {
        if (unordered(read, stream, clock)) {
          hit = &read;
          break;
        }
      }
    }
    if (hit != nullptr) {
      uintptr_t lo = std::max(begin, it->first);
      uintptr_t hi = std::min(end, r.end);
      *out = Conflict{*hit, lo, static_cast<size_t>(hi - lo), r.freed};
      return true;
    }
  }
  return false;
}

void ShadowMemory::split(uintptr_t at) {
  auto it = ranges_.upper_bound(at);
  if (it == ranges_.begin()) return;
  --it;
  if (it->first == at || it->second.end <= at) return;
  Range tail = it->second;
  it->second.end = at;
  ranges_.emplace(at, std::move(tail));
}

void ShadowMemory::record(uintptr_t begin, uintptr_t end, const Access& access, bool write) {
  if (begin >= end) return;
  split(begin);
  split(end);
  auto first = ranges_.lower_bound(begin);
  if (write) {
    ranges_.erase(first, ranges_.lower_bound(end));
    Range r;
    r.end = end;
    r.has_write = true;
    r.last_write = access;
    ranges_.emplace(begin, std::move(r));
    return;
  }
  // A read: add it to every existing range and fill the gaps with ranges
  // that have only this read.
  uintptr_t cursor = begin;
  auto it = first;
  while (cursor < end) {
    if (it == ranges_.end() || it->first > cursor) {
      uintptr_t gap_end = (it == ranges_.end()) ? end : std::min(end, it->first);
      Range r;
      r.end = gap_end;
      r.reads.push_back(access);
      it = std::next(ranges_.emplace_hint(it, cursor, std::move(r)));
      cursor = gap_end;
      continue;
    }
    Range& r = it->second;
    auto same = std::find_if(r.reads.begin(), r.reads.end(), [&](const Access& a) { return a.stream == access.stream; });
    if (same != r.reads.end()) *same = access;
    else r.reads.push_back(access);
    cursor = r.end;
    ++it;
  }
}

void ShadowMemory::note_free(uintptr_t begin, uintptr_t end) {
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->first < end; ++it) {
    if (it->second.end > begin) it->second.freed = true;
  }
}

void ShadowMemory::forget(uintptr_t begin, uintptr_t end) {
  if (begin >= end) return;
  split(begin);
  split(end);
  ranges_.erase(ranges_.lower_bound(begin), ranges_.lower_bound(end));
}

}  // namespace foo_sim::race

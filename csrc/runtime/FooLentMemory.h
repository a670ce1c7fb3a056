// Memory a running kernel hands to another library's threads, for the race
// detector. A fooccl kernel gives gloo the tensors of a collective, and
// gloo's own threads run CPU operators on them (a division for AVG, copies
// into an all_gather's output): those act for the kernel, which declared
// its accesses, not for the host, so they are no host accesses.
#pragma once

#include <cstddef>
#include <vector>

namespace foo {

struct MemoryRange {
  const void* begin;
  size_t bytes;
};

// Lends `ranges` for as long as it lives (the kernel's run). Costs nothing
// while the race detector is off.
class LentMemory {
 public:
  explicit LentMemory(std::vector<MemoryRange> ranges);
  ~LentMemory();
  LentMemory(const LentMemory&) = delete;
  LentMemory& operator=(const LentMemory&) = delete;

 private:
  std::vector<MemoryRange> ranges_;
};

// Whether [begin, begin + bytes) lies inside memory a running kernel lent.
bool is_lent(const void* begin, size_t bytes);

}  // namespace foo

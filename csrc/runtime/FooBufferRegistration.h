// Buffers a running kernel registers with a communication library (as
// NCCL's user buffer registration), for the race detector. A fooccl kernel
// gives gloo the tensors of a collective, and gloo's own threads run CPU
// operators on them (a division for AVG, copies into an all_gather's
// output): those act for the kernel, which declared its accesses, not for
// the host, so they are no host accesses.
#pragma once

#include <cstddef>
#include <vector>

namespace foo {

struct MemoryRange {
  const void* begin;
  size_t bytes;
};

// Registers `ranges` for as long as it lives (the kernel's run). Costs
// nothing while the race detector is off.
class BufferRegistration {
 public:
  explicit BufferRegistration(std::vector<MemoryRange> ranges);
  ~BufferRegistration();
  BufferRegistration(const BufferRegistration&) = delete;
  BufferRegistration& operator=(const BufferRegistration&) = delete;

 private:
  std::vector<MemoryRange> ranges_;
};

// Whether [begin, begin + bytes) lies inside a buffer a running kernel
// registered.
bool is_registered_buffer(const void* begin, size_t bytes);

}  // namespace foo

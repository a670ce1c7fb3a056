// Moving bytes for copies. A large copy is split into pieces moved by
// several threads at once, as CPU PyTorch splits its copy_ across its
// intra-op threads, so a transfer runs at the machine's memory bandwidth
// rather than one core's.
#pragma once

#include <cstddef>

namespace foo_sim {

// Moves `count` bytes from `src` to `dst` as std::memmove does, with up to
// `threads` threads (the calling thread among them) when the ranges do not
// overlap and each thread gets at least kMinBytesPerThread.
void copy_bytes(void* dst, const void* src, size_t count, int threads);

inline constexpr size_t kMinBytesPerThread = size_t{1} << 20;

}  // namespace foo_sim

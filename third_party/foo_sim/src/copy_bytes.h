// Moving bytes for copies. A large copy is split into pieces moved by
// several threads at once, as CPU PyTorch splits its copy_ across its
// intra-op threads, so a transfer runs at the machine's memory bandwidth
// rather than one core's.
#pragma once

#include <cstddef>

#include "foo_sim/foo_runtime.h"

namespace foo_sim {

// Moves `count` bytes from `src` to `dst` as std::memmove does, in up to
// `pieces` pieces moved at once when the ranges do not overlap and each
// piece gets at least kMinBytesPerPiece: by the registered copy runner
// (fooSetCopyRunner), or else by the calling thread and helper threads.
void copy_bytes(void* dst, const void* src, size_t count, int pieces);

// fooSetCopyRunner.
void set_copy_runner(fooCopyRunner runner, fooCopyWidthFn width, void* user_data);

// How many pieces a copy of `count` bytes issued now, on this thread, may
// be cut into: the configured number, capped by the registered runner's
// width (asked only when the copy is large enough to be cut at all).
int copy_pieces(int configured, size_t count);

inline constexpr size_t kMinBytesPerPiece = size_t{1} << 20;

}  // namespace foo_sim

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11), the counter-based generator CUDA's RNG uses: one call maps a
// 128-bit counter and a 64-bit key to 128 random bits, so any position of
// the stream is reachable without generating what comes before it.
#pragma once

#include <array>
#include <cstdint>

namespace foo {

inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;     // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;   // key schedule increments
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kMul0) * counter[0];
    uint64_t p1 = static_cast<uint64_t>(kMul1) * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(p0)};
    key = {key[0] + kWeyl0, key[1] + kWeyl1};
  }
  return counter;
}

}  // namespace foo

#include "copy_bytes.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace foo_sim {
namespace {

bool overlap(const void* dst, const void* src, size_t count) {
  auto d = reinterpret_cast<std::uintptr_t>(dst);
  auto s = reinterpret_cast<std::uintptr_t>(src);
  return d < s + count && s < d + count;
}

// memcpy of a piece of several MiB switches to non-temporal stores, which
// measured about 15% slower than ordinary stores on the machines this was
// tuned on (bench/: host<->foo copies against CPU copy_, which uses
// ordinary vector stores); chunks below that switch keep ordinary stores.
constexpr size_t kChunkBytes = size_t{128} << 10;

void move_piece(char* dst, const char* src, size_t count) {
  for (size_t offset = 0; offset < count; offset += kChunkBytes) {
    std::memcpy(dst + offset, src + offset, std::min(kChunkBytes, count - offset));
  }
}

// One copy cut into pieces of whole cache lines, the last one taking the remainder.
struct Pieces {
  char* dst;
  const char* src;
  size_t count;
  size_t piece;
  size_t pieces;

  void move(size_t i) const {
    size_t offset = i * piece;
    if (offset < count) move_piece(dst + offset, src + offset, std::min(piece, count - offset));
  }
};

struct Runner {
  fooCopyRunner fn = nullptr;
  fooCopyWidthFn width = nullptr;
  void* user_data = nullptr;
};
std::mutex runner_mutex;
Runner registered;

Runner current_runner() {
  std::lock_guard<std::mutex> lock(runner_mutex);
  return registered;
}

// Helper threads live for one copy: a copy this large takes milliseconds,
// starting a thread tens of microseconds, and nothing outlives the call
// (no pool to shut down at exit or to lose in a forked child).
void move_on_own_threads(const Pieces& p) {
  std::vector<std::thread> helpers;
  size_t i = 1;  // the calling thread moves piece 0
  for (; i < p.pieces; ++i) {
    try {
      helpers.emplace_back([&p, i] { p.move(i); });
    } catch (const std::system_error&) {
      break;  // no thread to be had: the rest here
    }
  }
  for (size_t rest = i; rest < p.pieces; ++rest) p.move(rest);
  p.move(0);
  for (auto& t : helpers) t.join();
}

}  // namespace

void set_copy_runner(fooCopyRunner runner, fooCopyWidthFn width, void* user_data) {
  std::lock_guard<std::mutex> lock(runner_mutex);
  registered = {runner, runner ? width : nullptr, user_data};
}

int copy_pieces(int configured, size_t count) {
  if (count < 2 * kMinBytesPerPiece) return 1;  // the common small copy: no lock, no callback
  Runner runner = current_runner();
  if (runner.fn == nullptr || runner.width == nullptr) return configured;
  return std::max(1, std::min(configured, runner.width(runner.user_data)));
}

void copy_bytes(void* dst, const void* src, size_t count, int pieces) {
  if (overlap(dst, src, count)) {
    std::memmove(dst, src, count);
    return;
  }
  Pieces p{static_cast<char*>(dst), static_cast<const char*>(src), count, 0, 0};
  p.pieces = std::min<size_t>(std::max(pieces, 1), count / kMinBytesPerPiece);
  if (p.pieces < 2) {
    move_piece(p.dst, p.src, count);
    return;
  }
  p.piece = (count / p.pieces + 63) & ~size_t{63};
  p.pieces = (count + p.piece - 1) / p.piece;
  Runner runner = current_runner();
  if (runner.fn == nullptr) {
    move_on_own_threads(p);
    return;
  }
  runner.fn(p.pieces, [](size_t i, void* data) { static_cast<const Pieces*>(data)->move(i); }, &p, runner.user_data);
}

}  // namespace foo_sim

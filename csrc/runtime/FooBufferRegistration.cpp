#include "runtime/FooBufferRegistration.h"

#include <algorithm>
#include <mutex>

#include <foo_sim/foo_race.h>

namespace foo {
namespace {

// Few collectives run at once: a list is enough.
std::mutex g_mutex;
std::vector<MemoryRange> g_registered;

bool same(const MemoryRange& a, const MemoryRange& b) { return a.begin == b.begin && a.bytes == b.bytes; }

}  // namespace

BufferRegistration::BufferRegistration(std::vector<MemoryRange> ranges) {
  if (fooRaceGetMode() == fooRaceModeOff) return;
  ranges_ = std::move(ranges);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_registered.insert(g_registered.end(), ranges_.begin(), ranges_.end());
}

BufferRegistration::~BufferRegistration() {
  if (ranges_.empty()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const MemoryRange& r : ranges_) {
    auto it = std::find_if(g_registered.begin(), g_registered.end(), [&](const MemoryRange& l) { return same(l, r); });
    if (it != g_registered.end()) g_registered.erase(it);
  }
}

bool is_registered_buffer(const void* begin, size_t bytes) {
  const char* b = static_cast<const char*>(begin);
  std::lock_guard<std::mutex> lock(g_mutex);
  return std::any_of(g_registered.begin(), g_registered.end(), [&](const MemoryRange& l) {
    const char* lb = static_cast<const char*>(l.begin);
    return b >= lb && b + bytes <= lb + l.bytes;
  });
}

}  // namespace foo

#include "aten/OpCounts.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <utility>

namespace foo::aten {
namespace {

// One operator that made the host wait. Made once, under the mutex, and
// never moved or freed: threads keep pointers to the ones they counted
// lately and count those again with one atomic add (a test suite reads
// thousands of values, each a synchronizing `.item()`).
struct Synchronizing {
  explicit Synchronizing(std::string_view op) : name(op) {}
  const std::string name;
  std::atomic<int64_t> since_take{0};
};

struct Counts {
  std::mutex mutex;
  std::map<std::string, int64_t, std::less<>> fallback_since_take;
  std::deque<Synchronizing> synchronizing;  // every operator ever counted
  std::map<std::string_view, Synchronizing*> synchronizing_by_name;  // keys: the entries' names
};

Counts& counts() {
  static auto* instance = new Counts();  // never destroyed: executors and exit paths may still count
  return *instance;
}

Synchronizing* synchronizing_entry(std::string_view op) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  auto& by_name = counts().synchronizing_by_name;
  auto it = by_name.find(op);
  if (it != by_name.end()) return it->second;
  Synchronizing& entry = counts().synchronizing.emplace_back(op);
  by_name.emplace(entry.name, &entry);
  return &entry;
}

}  // namespace

void count_fallback_call(const std::string& op) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  ++counts().fallback_since_take[op];
}

void note_synchronizing(std::string_view op) {
  thread_local std::array<Synchronizing*, 4> recent{};
  thread_local size_t next = 0;
  for (Synchronizing* entry : recent) {
    if (entry != nullptr && entry->name == op) {
      entry->since_take.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Synchronizing* entry = synchronizing_entry(op);
  entry->since_take.fetch_add(1, std::memory_order_relaxed);
  recent[next] = entry;
  next = (next + 1) % recent.size();
}

std::vector<std::string> synchronizing_ops() {
  std::lock_guard<std::mutex> lock(counts().mutex);
  std::vector<std::string> names;
  for (const auto& [name, entry] : counts().synchronizing_by_name) names.emplace_back(name);
  return names;  // sorted: the map's order
}

OpCounts take_op_counts() {
  std::lock_guard<std::mutex> lock(counts().mutex);
  OpCounts taken;
  taken.fallback = std::exchange(counts().fallback_since_take, {});
  for (Synchronizing& entry : counts().synchronizing) {
    if (int64_t n = entry.since_take.exchange(0, std::memory_order_relaxed)) taken.synchronizing.emplace(entry.name, n);
  }
  return taken;
}

}  // namespace foo::aten

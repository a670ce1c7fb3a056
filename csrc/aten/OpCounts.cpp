#include "aten/OpCounts.h"

#include <mutex>
#include <set>
#include <utility>

namespace foo::aten {
namespace {

struct Counts {
  std::mutex mutex;
  OpCounts since_take;
  std::set<std::string, std::less<>> ever_synchronizing;
};

Counts& counts() {
  static auto* instance = new Counts();  // never destroyed: executors and exit paths may still count
  return *instance;
}

}  // namespace

void count_fallback_call(const std::string& op) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  ++counts().since_take.fallback[op];
}

void note_synchronizing(std::string_view op) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  auto& since_take = counts().since_take.synchronizing;
  auto it = since_take.find(op);
  if (it != since_take.end()) {
    ++it->second;  // then in ever_synchronizing too
    return;
  }
  since_take.emplace(std::string(op), 1);
  if (counts().ever_synchronizing.find(op) == counts().ever_synchronizing.end()) {
    counts().ever_synchronizing.emplace(op);
  }
}

std::vector<std::string> synchronizing_ops() {
  std::lock_guard<std::mutex> lock(counts().mutex);
  return {counts().ever_synchronizing.begin(), counts().ever_synchronizing.end()};
}

OpCounts take_op_counts() {
  std::lock_guard<std::mutex> lock(counts().mutex);
  return std::exchange(counts().since_take, OpCounts{});
}

}  // namespace foo::aten

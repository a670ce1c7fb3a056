#include "aten/FallbackLog.h"

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <c10/util/Exception.h>

#include "aten/Fallback.h"
#include "aten/OpCounts.h"

namespace foo::aten {
namespace {

struct FallbackLog {
  std::mutex mutex;
  std::set<std::string> ops;
  const bool warn = [] {
    const char* v = std::getenv("FOO_WARN_FALLBACK");
    std::string value = v == nullptr ? "" : v;
    if (value == "1") return true;
    // Read at the first fallback, where failing would break an unrelated
    // operator: a malformed value is reported and counts as off.
    if (value != "" && value != "0") {
      TORCH_WARN("FOO_WARN_FALLBACK='", value, "' is invalid: expected 0 or 1; fallback warnings stay off");
    }
    return false;
  }();

  void note(const std::string& op) {
    count_fallback_call(op);
    std::lock_guard<std::mutex> lock(mutex);
    if (ops.insert(op).second && warn) {
      TORCH_WARN("The operator '", op, "' has no foo kernel: it runs through the CPU fallback.");
    }
  }
};

FallbackLog& log() {
  static FallbackLog instance;
  return instance;
}

}  // namespace

namespace fallback {

void note_fallback(const std::string& op) { log().note(op); }

}  // namespace fallback

std::vector<std::string> fallback_ops() {
  std::lock_guard<std::mutex> lock(log().mutex);
  return {log().ops.begin(), log().ops.end()};
}

}  // namespace foo::aten

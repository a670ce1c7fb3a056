#include "harness.h"

#include <dirent.h>

#include <cstring>
#include <stdexcept>

namespace harness {
namespace {

struct CaseFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

void fail_case(const char* file, int line, const std::string& what) {
  throw CaseFailure(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

size_t thread_count() {
  size_t n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(dir);
  }
  return n;
}

}  // namespace harness

int main(int argc, char** argv) {
  int passed = 0, failed = 0;
  for (const auto& c : harness::registry()) {
    bool selected = argc == 1;
    for (int i = 1; i < argc; ++i) selected = selected || std::strcmp(argv[i], c.name) == 0;
    if (!selected) continue;
    try {
      c.fn();
      ++passed;
      std::printf("[ ok ] %s\n", c.name);
    } catch (const std::exception& e) {
      ++failed;
      std::printf("[FAIL] %s\n       %s\n", c.name, e.what());
    }
    std::fflush(stdout);
  }
  if (passed + failed == 0) {
    std::printf("no test case matched\n");
    return 2;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

#include "distributed/GlooWaits.h"

namespace foo::distributed {

void drain(c10d::Work& work) noexcept {
  try {
    work.wait();
  } catch (...) {
    // The failure that led here is the one to report.
  }
}

void wait_all(const std::vector<c10::intrusive_ptr<c10d::Work>>& works, std::chrono::milliseconds timeout) {
  for (size_t i = 0; i < works.size(); ++i) {
    try {
      works[i]->wait(timeout);
    } catch (...) {
      for (size_t j = i; j < works.size(); ++j) drain(*works[j]);
      throw;
    }
  }
}

}  // namespace foo::distributed

#include "aten/Launch.h"

namespace foo::aten {

void use_thread_count(int threads) {
  // Per executor thread: only call into OpenMP when the count changes.
  thread_local int current = -1;
  if (threads != current) {
    at::set_num_threads(threads);
    current = threads;
  }
}

}  // namespace foo::aten

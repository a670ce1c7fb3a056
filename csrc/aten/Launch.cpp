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

void report_kernel_failure(const char* op_name, const char* what) noexcept {
  try {
    fooKernelReportError((std::string(op_name) + ": " + what).c_str());
  } catch (...) {
    fooKernelReportError(op_name);  // out of memory for the message: the name alone
  }
}

}  // namespace foo::aten

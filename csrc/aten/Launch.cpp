#include "aten/Launch.h"

#include <mutex>
#include <unordered_set>

#include "runtime/FooIdleThreads.h"

namespace foo::aten {

const char* interned_name(const std::string& name) {
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>();  // never freed: kernels and traces keep pointers
  std::lock_guard<std::mutex> lock(mutex);
  return names->insert(name).first->c_str();
}

void use_thread_count(int threads) {
  if (threads > 1) note_executor_parallel_kernel();
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

void report_kernel_failure(const char* op_name, const c10::Error& e) noexcept {
  try {
    fooKernelReportError(typed_kernel_message(e, std::string(op_name) + ": " + e.what_without_backtrace()).c_str());
  } catch (...) {
    fooKernelReportError(op_name);
  }
}

}  // namespace foo::aten

#include "aten/Launch.h"

#include <mutex>
#include <unordered_set>

#include "aten_runtime/FooHostWork.h"
#include "runtime/FooIdleThreads.h"

namespace foo::aten {

const char* interned_name(const std::string& name) {
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>();  // never freed: kernels and traces keep pointers
  std::lock_guard<std::mutex> lock(mutex);
  return names->insert(name).first->c_str();
}

void use_thread_count(int threads, bool serial) {
  // A serial kernel runs on one thread wherever it runs: its ATen loops take
  // one range anyway, but BLAS decides for itself, and MKL starts a team of
  // two for a 64x64 matmul. Such a team on an executor beside a host that
  // keeps launching puts more threads than cores under libgomp, which then
  // makes every team sleep between parallel regions: a loop of small
  // operators took ten times as long in some rounds.
  if (serial) threads = 1;
  // A waiting host running the kernel: its own count put back after
  // (FooHostWork.h).
  if (running_host_work()) {
    if (at::get_num_threads() != threads) at::set_num_threads(threads);
    return;
  }
  if (threads > 1) note_executor_parallel_kernel();
  // Per executor thread: only call into OpenMP when the count changes.
  thread_local int current = -1;
  if (threads != current) {
    at::set_num_threads(threads);
    current = threads;
  }
}

void report_kernel_failure(const char* op_name, const char* what, const char* site) noexcept {
  try {
    std::string message = std::string(op_name) + ": " + what;
    if (site != nullptr) message += std::string(", launched from ") + site;
    fooKernelReportError(message.c_str());
  } catch (...) {
    fooKernelReportError(op_name);  // out of memory for the message: the name alone
  }
}

void report_kernel_failure(const char* op_name, const c10::Error& e, const char* site) noexcept {
  try {
    std::string message = std::string(op_name) + ": " + e.what_without_backtrace();
    if (site != nullptr) message += std::string(", launched from ") + site;
    fooKernelReportError(typed_kernel_message(e, message).c_str());
  } catch (...) {
    fooKernelReportError(op_name);
  }
}

void launch_failing_kernel(c10::DeviceIndex device, const char* op_name, const std::string& fault) {
  std::string what = "the kernel failed on the device (injected by the fault " + fault + ")";
  launch_kernel(getCurrentFooStream(device),
                [op_name, what = std::move(what), site = launch_site_to_record()] {
                  report_kernel_failure(op_name, what.c_str(), site);
                },
                op_name);
}

}  // namespace foo::aten

// Launches the work of an operator on the current stream of a foo device.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "runtime/FooLaunch.h"
#include "runtime/FooStream.h"

namespace foo::aten {

// `fn` runs on the stream in order; an exception it throws is reported,
// prefixed with `op_name`, at the stream's next query or synchronization.
// Gives the executor thread the launching thread's intra-op thread count
// (torch.set_num_threads is per thread for OpenMP).
void use_thread_count(int threads);

template <class F>
void launch_op(c10::DeviceIndex device, const char* op_name, F&& fn) {
  int threads = at::get_num_threads();
  launch_kernel(getCurrentFooStream(device), [op_name, threads, fn = std::forward<F>(fn)]() mutable {
    use_thread_count(threads);
    try {
      fn();
    } catch (const c10::Error& e) {
      fooKernelReportError((std::string(op_name) + ": " + e.what_without_backtrace()).c_str());
    } catch (const std::exception& e) {
      fooKernelReportError((std::string(op_name) + ": " + e.what()).c_str());
    }
  });
}

}  // namespace foo::aten

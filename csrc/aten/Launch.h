// Launches the work of an operator on the current stream of a foo device.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "aten/TensorInfo.h"
#include "runtime/FooKernelWarnings.h"
#include "runtime/FooLaunch.h"
#include "runtime/FooStream.h"

namespace foo::aten {

// Gives the executor thread the launching thread's intra-op thread count
// (torch.set_num_threads is per thread for OpenMP).
void use_thread_count(int threads);
// `name` in storage that lives as long as the process: an operator's name
// for a kernel and the profiler, which may outlive the operator (one defined
// from Python through torch.library can be destroyed).
const char* interned_name(const std::string& name);
// Reports a failed kernel to foo_sim, naming the operator (and, for a c10
// exception, keeping its type for the synchronization that reports it).
void report_kernel_failure(const char* op_name, const char* what) noexcept;
void report_kernel_failure(const char* op_name, const c10::Error& e) noexcept;

// An operator's kernel as queued: its closure, with what the executor needs
// to run it as the launching thread would have.
template <class F>
struct OpKernel {
  const char* op_name;
  int threads;
  KernelWarningInbox* launcher;  // whose warnings the kernel's are
  F fn;
  void operator()() {
    use_thread_count(threads);
    AliasScope aliases;
    KernelWarningScope warnings(op_name, launcher);
    try {
      fn();
    } catch (const c10::Error& e) {
      report_kernel_failure(op_name, e);
    } catch (const std::exception& e) {
      report_kernel_failure(op_name, e.what());
    }
  }
  // A graph replay's hint (FooLaunch.h): this header, then the closure's.
  void prefetch(int stage) const {
    if (stage == 0) prefetch_bytes(this, sizeof(op_name) + sizeof(threads) + sizeof(launcher));
    prefetch_closure(fn, stage);
  }
};

// `fn` runs on the stream in order; an exception it throws is reported,
// prefixed with `op_name`, at the next synchronization that covers it.
template <class F>
void launch_op(c10::DeviceIndex device, const char* op_name, F&& fn) {
  reraise_kernel_warnings();  // this thread's earlier kernels': raised at its next call, as near as it gets
  int threads = at::get_num_threads();
  KernelWarningInbox* launcher = launching_thread_inbox();
  launch_kernel_made<ClosureRelease::Deferred>(
      getCurrentFooStream(device),
      [&] { return OpKernel<std::decay_t<F>>{op_name, threads, launcher, std::forward<F>(fn)}; }, op_name);
}

// For kernels whose CPU implementations exist only in functional form
// (convolution, normalization, most losses): the outputs are allocated on
// the host with the shapes the caller computed, `compute` runs on the
// stream over CPU aliases and returns fresh CPU results, and each result is
// copied once into its foo output.
template <class F>
void launch_into(c10::Device device, const char* op_name, const std::vector<at::Tensor>& outputs, F compute) {
  std::vector<std::optional<TensorInfo>> targets;
  bool any = false;
  for (const at::Tensor& t : outputs) {
    bool wanted = t.defined() && t.numel() > 0;
    any = any || wanted;
    targets.push_back(wanted ? std::optional<TensorInfo>(t) : std::nullopt);
  }
  if (!any) return;
  launch_op(device.index(), op_name, [targets = std::move(targets), compute = std::move(compute)] {
    std::vector<at::Tensor> results = compute();
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i] && results[i].defined()) targets[i]->cpu().copy_(results[i]);
    }
  });
}

}  // namespace foo::aten

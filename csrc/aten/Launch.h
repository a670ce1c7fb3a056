// Launches the work of an operator on the current stream of a foo device.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include "aten/TensorInfo.h"
#include "runtime/FooFaults.h"
#include "runtime/FooKernelWarnings.h"
#include "runtime/FooLaunch.h"
#include "runtime/FooStream.h"

namespace foo::aten {

// Gives the executor thread the launching thread's intra-op thread count
// (torch.set_num_threads is per thread for OpenMP); a serial kernel takes
// one thread, on an executor or a waiting host alike (SerialWork).
void use_thread_count(int threads, bool serial);

// Counts the elements a kernel touches, to tell whether it is serial work
// (fooKernelSerial): fewer than GRAIN_SIZE in all, so that ATen's parallel
// loops and reductions over them take one range whatever the thread count
// (the same result on one thread), and a product of such sizes gains little
// from a second thread. Such kernels run on one thread; a waiting host
// whose own threads would form a second OpenMP team beside the executors'
// (FooHostWork.h) runs only them.
class SerialWork {
 public:
  void add(const at::TensorBase& t) {
    if (t.defined()) elements_ += t.numel();
  }
  void add(const std::optional<at::Tensor>& t) {
    if (t) add(*t);
  }
  bool serial() const { return elements_ < at::internal::GRAIN_SIZE; }

 private:
  int64_t elements_ = 0;
};
template <class... T>
SerialWork work_of(const T&... tensors) {
  SerialWork work;
  (work.add(tensors), ...);
  return work;
}
template <class... T>
bool serial_work(const T&... tensors) {
  return work_of(tensors...).serial();
}

// The intra-op thread count a kernel runs with (use_thread_count).
enum class KernelThreads : uint8_t {
  Launcher,  // the launching thread's
  One,       // serial work: one thread
  // Serial work whose only parallelism is ATen's parallel loops
  // (TensorIterator kernels: pointwise, reductions, copy, fill): over fewer
  // than GRAIN_SIZE elements those take one range whatever the count, so
  // the kernel keeps the count of the thread it runs on, and a waiting host
  // that runs it sets no count and restores none.
  AnyOne,
};
inline KernelThreads serial_or_launcher(bool serial) { return serial ? KernelThreads::One : KernelThreads::Launcher; }
// For a kernel whose only parallelism is ATen's parallel loops over `tensors`.
template <class... T>
KernelThreads loop_kernel_threads(const T&... tensors) {
  return serial_work(tensors...) ? KernelThreads::AnyOne : KernelThreads::Launcher;
}
// `name` in storage that lives as long as the process: an operator's name
// for a kernel and the profiler, which may outlive the operator (one defined
// from Python through torch.library can be destroyed).
const char* interned_name(const std::string& name);
// Reports a failed kernel to foo_sim, naming the operator and, if known,
// the site that launched it (for a c10 exception, keeping its type for the
// synchronization that reports it).
void report_kernel_failure(const char* op_name, const char* what, const char* site) noexcept;
void report_kernel_failure(const char* op_name, const c10::Error& e, const char* site) noexcept;
// Queues, in place of an operator's kernel, one that fails as it would
// (the fault injected there: FooFaults.h).
void launch_failing_kernel(c10::DeviceIndex device, const char* op_name, const std::string& fault);

// An operator's kernel as queued: its closure, with what the executor needs
// to run it as the launching thread would have.
template <class F>
struct OpKernel {
  const char* op_name;
  int threads;
  KernelThreads thread_use;
  KernelWarningInbox* launcher;  // whose warnings the kernel's are
  const char* site;  // where it was launched, if recorded (launch_site_to_record)
  F fn;
  void operator()() {
    if (thread_use != KernelThreads::AnyOne) use_thread_count(threads, thread_use == KernelThreads::One);
    // Below autograd, as a CPU kernel runs under its autograd kernel: the
    // operators the CPU implementation calls (views, fill_) skip the
    // autograd and view-tracking layers it would only pass through.
    c10::impl::ExcludeDispatchKeyGuard below_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    AliasScope aliases;
    KernelWarningScope warnings(op_name, launcher);
    try {
      fn();
    } catch (const c10::Error& e) {
      report_kernel_failure(op_name, e, site);
    } catch (const std::exception& e) {
      report_kernel_failure(op_name, e.what(), site);
    }
  }
  // A graph replay's hint (FooLaunch.h): this header, then the closure's.
  void prefetch(int stage) const {
    if (stage == 0) prefetch_bytes(this, sizeof(op_name) + sizeof(threads) + sizeof(thread_use) + sizeof(launcher));
    prefetch_closure(fn, stage);
  }
};

// The closure `make()` returns runs on the stream in order, built straight
// into the queued box (no move of its captures); an exception it throws is
// reported, prefixed with `op_name`, at the next synchronization that
// covers it. `thread_use`: how many threads it runs on (KernelThreads).
template <class Make>
void launch_op_made(c10::DeviceIndex device, const char* op_name, Make&& make, KernelThreads thread_use) {
  reraise_kernel_warnings();  // this thread's earlier kernels': raised at its next call, as near as it gets
  if (C10_UNLIKELY(faults_armed())) {
    std::string fault = take_kernel_fault(op_name);
    if (!fault.empty()) return launch_failing_kernel(device, op_name, fault);
  }
  int threads = at::get_num_threads();
  KernelWarningInbox* launcher = launching_thread_inbox();
  const char* site = launch_site_to_record();
  launch_kernel_made<ClosureRelease::Deferred>(
      getCurrentFooStream(device),
      [&] { return OpKernel<decltype(make())>{op_name, threads, thread_use, launcher, site, make()}; }, op_name,
      thread_use == KernelThreads::Launcher ? fooKernelDefault : fooKernelSerial);
}

// `fn` runs on the stream in order, as launch_op_made's closure.
template <class F>
void launch_op(c10::DeviceIndex device, const char* op_name, F&& fn, KernelThreads thread_use) {
  launch_op_made(device, op_name, [&]() -> std::decay_t<F> { return std::forward<F>(fn); }, thread_use);
}
// `serial`: the kernel is serial work (SerialWork).
template <class F>
void launch_op(c10::DeviceIndex device, const char* op_name, F&& fn, bool serial = false) {
  launch_op(device, op_name, std::forward<F>(fn), serial_or_launcher(serial));
}

// For kernels whose CPU implementations exist only in functional form
// (convolution, normalization, most losses): the outputs are allocated on
// the host with the shapes the caller computed, `compute` runs on the
// stream over CPU aliases and returns fresh CPU results, and each result is
// copied once into its foo output. `inputs`: the tensors `compute` reads, for
// SerialWork (none given: not serial).
template <class F>
void launch_into(c10::Device device, const char* op_name, const std::vector<at::Tensor>& outputs, F compute,
                 std::optional<SerialWork> inputs = std::nullopt) {
  std::vector<std::optional<TensorInfo>> targets;
  bool any = false;
  for (const at::Tensor& t : outputs) {
    if (inputs) inputs->add(t);
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
  }, inputs && inputs->serial());
}

}  // namespace foo::aten

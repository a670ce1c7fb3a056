// Warnings that CPU kernels raise as they run on an executor thread (std
// with too few degrees of freedom, a complex-to-real cast) are held here
// and raised again on the host at its next launch or wait, where Python's
// warnings machinery sees them. CUDA's host code raises them at the call;
// here the kernel that finds them runs later, on another thread, whose
// warnings would otherwise only reach stderr.
#pragma once

#include <atomic>

#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

namespace foo {

// While it lives, warnings raised on this thread are held, each prefixed
// with `op_name` (a name that outlives the warning).
class KernelWarningScope {
 public:
  explicit KernelWarningScope(const char* op_name);
  ~KernelWarningScope();
  KernelWarningScope(const KernelWarningScope&) = delete;
  KernelWarningScope& operator=(const KernelWarningScope&) = delete;

 private:
  c10::WarningHandler* previous_handler_;
  const char* previous_op_name_;
};

namespace detail {
extern std::atomic<bool> kernel_warnings_held;
void reraise_held_kernel_warnings();
}  // namespace detail

// On the host: raises the held warnings on the calling thread, in the order
// the kernels raised them. Cheap when there are none (every launch calls it).
inline void reraise_kernel_warnings() {
  if (C10_UNLIKELY(detail::kernel_warnings_held.load(std::memory_order_relaxed))) {
    detail::reraise_held_kernel_warnings();
  }
}

}  // namespace foo

// Warnings that CPU kernels raise as they run on an executor thread (std
// with too few degrees of freedom, a complex-to-real cast) are held for the
// thread that launched the kernel and raised again there, at its next
// launch or wait, where Python's warnings machinery sees them. CUDA's host
// code raises such warnings at the call; here the kernel that finds them
// runs later, on another thread, whose warnings would otherwise only reach
// stderr. Another thread never sees them.
#pragma once

#include <atomic>

#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

namespace foo {

// The warnings held for one launching thread. Never freed: a kernel may
// still hold one after its thread has ended (what arrives then goes to
// stderr).
class KernelWarningInbox;

// The calling thread's inbox, for the kernels it launches.
KernelWarningInbox* launching_thread_inbox();

// While it lives, warnings raised on this thread are held in `inbox`, each
// prefixed with `op_name` (a name that outlives the warning).
class KernelWarningScope {
 public:
  KernelWarningScope(const char* op_name, KernelWarningInbox* inbox);
  ~KernelWarningScope();
  KernelWarningScope(const KernelWarningScope&) = delete;
  KernelWarningScope& operator=(const KernelWarningScope&) = delete;

 private:
  c10::WarningHandler* previous_handler_;
};

namespace detail {
// Whether the calling thread's kernels left warnings for it.
bool has_held_kernel_warnings();
void reraise_held_kernel_warnings();
}  // namespace detail

// On the host: raises the warnings held for the calling thread, in the
// order its kernels raised them. Cheap when there are none (every launch
// calls it).
inline void reraise_kernel_warnings() {
  if (C10_UNLIKELY(detail::has_held_kernel_warnings())) detail::reraise_held_kernel_warnings();
}

}  // namespace foo

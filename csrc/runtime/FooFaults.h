// Deterministic fault injection, for testing a program's own error paths:
// the N-th allocation request of the caching allocator raises
// torch.OutOfMemoryError as a real out-of-memory does (`oom@N`), the N-th
// launch of an operator fails on the device as a kernel error does
// (`kernel@OP:N`). Armed for the process by FOO_SIM_FAULTS, or for a block
// by torch_foo.testing.inject_faults (push_faults/pop_faults).
//
// The allocator and the launch path consult it with one predictable
// branch (faults_armed()) while nothing is armed.
#pragma once

#include <atomic>
#include <string>

#include <c10/macros/Macros.h>

namespace foo {

namespace detail {
extern std::atomic<bool> faults_armed;
}  // namespace detail

// True while a fault that has not fired yet is armed.
inline bool faults_armed() { return detail::faults_armed.load(std::memory_order_relaxed); }

// What is wrong with `spec` ("" if nothing): a comma-separated list of
// `oom@N` and `kernel@OP:N`, N >= 1.
std::string check_fault_spec(const std::string& spec);

// Arms `spec`, counted from now, in place of the armed faults; pop_faults
// arms those again, with their counts as they were. Throws c10::Error for a
// malformed spec.
void push_faults(const std::string& spec);
void pop_faults();

// At the runtime's start: arms FOO_SIM_FAULTS under any pushed faults.
// Throws c10::Error naming the variable if it is malformed.
void arm_faults_from_environment();

// Counts one allocation request; the fault (as its spec says it, "oom@3")
// if this request must fail, else "". Call only if faults_armed().
std::string take_oom_fault();

// Counts one launch of the operator `op_name` ("aten::mul.Tensor"); the
// fault if this launch must fail, else "". Call only if faults_armed().
std::string take_kernel_fault(const char* op_name);

}  // namespace foo

// Waiting for gloo operations that work on memory the caller will let go.
//
// Work::wait(timeout) may give up while gloo's thread still reads or
// writes the buffers; so after a failure, every operation still in flight
// is drained (waited for without a timeout of ours: gloo's own timeout ends
// every operation) before the error goes on and the memory is released.
#pragma once

#include <chrono>
#include <vector>

#include <torch/csrc/distributed/c10d/Work.hpp>

namespace foo::distributed {

// Waits for `work` to end and swallows its failure.
void drain(c10d::Work& work) noexcept;

// Waits for each of `works` in order; if one fails, drains the others and
// rethrows its failure.
void wait_all(const std::vector<c10::intrusive_ptr<c10d::Work>>& works, std::chrono::milliseconds timeout);

}  // namespace foo::distributed

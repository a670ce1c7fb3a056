// gloo aborts the whole process when the ranks' buffers differ in size, so
// fooccl first compares what every rank is about to exchange (operation,
// dtypes, element counts) and fails the collective cleanly, on every rank,
// when they differ.
//
// The comparison travels on a gloo group of its own. The host starts it
// when the collective is called, in call order on every rank, so that it
// runs while the stream is still on its way to the collective; the
// collective's kernel then only waits for the result, usually already
// there, and compares. (Checked in the kernel, a round trip of its own
// would delay every collective.)
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace foo::distributed {

class SignatureExchange {
 public:
  // Starts the exchange of `mine` with every rank of `group`.
  SignatureExchange(c10d::Backend& group, std::vector<int64_t> mine);
  // Waits for it (at most `timeout`); throws, naming both ranks' values, if
  // a rank differs.
  void check(std::chrono::milliseconds timeout) const;

 private:
  std::vector<int64_t> mine_;
  int rank_;
  at::Tensor own_;  // fixed size: ranks that call different operations still exchange as much
  at::Tensor all_;
  c10::intrusive_ptr<c10d::Work> work_;
};

}  // namespace foo::distributed

// A collective's fingerprint, as c10d's CollectiveFingerPrint (the check
// TORCH_DISTRIBUTED_DEBUG=DETAIL makes): gloo aborts the whole process when
// the ranks' buffers differ in size, so fooccl first compares what every
// rank is about to exchange (operation, dtypes, element counts) and fails
// the collective cleanly, on every rank, when they differ.
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

// An all-to-all's ranks send different amounts to each other, so they
// cannot agree on one fingerprint. What each rank sends to every rank, and
// expects from every rank (element counts, indexed by rank), travels along
// with it instead, and every rank checks every pair, so that all of them
// fail together.
struct PairCounts {
  std::vector<int64_t> sends_to;
  std::vector<int64_t> receives_from;
};

class FingerPrintExchange {
 public:
  // Starts the exchange of `mine` (and of `pairs`, for an all-to-all) with
  // every rank of `group`.
  FingerPrintExchange(c10d::Backend& group, std::vector<int64_t> mine, const PairCounts& pairs = {});
  // Waits for it (at most `timeout`); throws, naming both ranks' values, if
  // a rank differs, or naming the pair whose counts differ.
  void check(std::chrono::milliseconds timeout) const;

 private:
  void check_pairs() const;

  std::vector<int64_t> mine_;
  int rank_;
  int size_;
  // Fixed size (the fingerprint's slots, then the pair counts, zero if none):
  // ranks that call different operations still exchange as much.
  at::Tensor own_;
  at::Tensor all_;
  c10::intrusive_ptr<c10d::Work> work_;
};

}  // namespace foo::distributed

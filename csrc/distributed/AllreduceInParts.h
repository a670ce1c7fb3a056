// An all_reduce of a large buffer as two all_reduces of its halves, in
// flight at once.
//
// gloo runs each operation on one of its worker threads, and one thread
// moves a large buffer through the loopback at about half the rate two do:
// measured between two processes, a 4 MiB all_reduce took 2.8 to 3.8 ms
// whole and 2.5 to 2.7 ms as two halves at once, 8 MiB 5.3 to 6.3 ms
// against 4.6 to 5.6 (at 2 MiB the two were even, at 1 MiB the halves
// lost). NCCL spreads one collective over several channels alike. Every
// reduction gloo offers works element by element, so the halves give what
// the whole would; both ranks split the same way, in the same order.
#pragma once

#include <chrono>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace foo::distributed {

// Buffers from this size on are reduced in two halves.
constexpr size_t kAllreduceInPartsFrom = 2 << 20;

// all_reduce on `gloo` of `elements`: a dense tensor's elements in memory
// order, one dimension (FooBackend's flat()). A small one is returned in
// flight, for the caller to wait for; a large one is waited for here, both
// halves (GlooWaits.h), and nothing is returned.
c10::intrusive_ptr<c10d::Work> allreduce_in_parts(c10d::Backend& gloo, const at::Tensor& elements,
                                                  const c10d::AllreduceOptions& opts,
                                                  std::chrono::milliseconds timeout);

}  // namespace foo::distributed

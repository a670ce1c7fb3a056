// The Work a foo collective returns, with NCCL's stream semantics: the
// collective ends at an event recorded on the backend's internal stream, and
// waiting makes the caller's current stream wait for that event; the host
// does not block (except for a barrier, which is the host's own rendezvous).
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <foo_sim/foo_runtime.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "runtime/FooStream.h"

namespace foo::distributed {

// Where a collective's kernel leaves its failure, for its Work: a failing
// kernel's error is reported once, by the first synchronization that sees
// it, but an NCCL Work whose collective failed keeps failing however often
// it is asked. Written by the kernel before it ends; read once the Work's
// end event has passed, which orders the two.
using FailureSlot = std::shared_ptr<std::string>;

class FooWork : public c10d::Work {
 public:
  // `outputs` are what result() and the future hand back; `host_blocking`
  // makes wait() block the host too (barrier); `failures` are the slots of
  // the kernels it covers (a coalesced group's Work covers its
  // collectives').
  FooWork(int rank, c10d::OpType type, const char* title, c10::Device device, std::vector<at::Tensor> outputs,
          bool host_blocking, std::vector<FailureSlot> failures = {});
  ~FooWork() override;

  // Marks the end of the collective on `internal` (the last thing the
  // backend queues for it) and completes the future in stream order.
  void record_end(const FooStream& internal);

  // True once the end event has passed; a failure of the collective
  // (a gloo error, a timeout, a peer that died) is kept for wait().
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  // The current foo stream waits for the end event; the host does not.
  void synchronize() override;
  // synchronize(); with a timeout (or for a barrier) the host also waits
  // until the collective has ended. A failure of a collective that has
  // ended is raised here.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  // Turns the end event's state into done_/error_; the caller holds mutex_.
  bool poll_locked();
  // Once the end event has passed (`e`: its result): done_, and error_
  // from the stream's error or the kernel's slot.
  void finish_locked(fooError_t e);
  void block_host(std::chrono::milliseconds timeout);

  c10::Device device_;
  std::vector<at::Tensor> outputs_;
  bool host_blocking_;
  std::vector<FailureSlot> failures_;
  fooEvent_t end_ = nullptr;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  mutable std::mutex mutex_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace foo::distributed

// The Work a foo collective returns, with NCCL's stream semantics: the
// collective ends at an event recorded on the backend's internal stream, and
// waiting makes the caller's current stream wait for that event; the host
// does not block (except for a barrier, which is the host's own rendezvous).
#pragma once

#include <chrono>
#include <exception>
#include <mutex>
#include <vector>

#include <ATen/core/ivalue.h>
#include <foo_sim/foo_runtime.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "runtime/FooStream.h"

namespace foo::distributed {

class FooWork : public c10d::Work {
 public:
  // `outputs` are what result() and the future hand back; `host_blocking`
  // makes wait() block the host too (barrier).
  FooWork(int rank, c10d::OpType type, const char* title, c10::Device device, std::vector<at::Tensor> outputs,
          bool host_blocking);
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
  // until the collective has ended, and a failure is raised here.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  // Turns the end event's state into done_/error_; the caller holds mutex_.
  bool poll_locked();
  void block_host(std::chrono::milliseconds timeout);

  c10::Device device_;
  std::vector<at::Tensor> outputs_;
  bool host_blocking_;
  fooEvent_t end_ = nullptr;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  mutable std::mutex mutex_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace foo::distributed

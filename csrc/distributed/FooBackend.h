// fooccl: the c10d backend for foo tensors. Transport is a gloo process
// group over the same store; this class gives gloo's host collectives
// NCCL's stream semantics on foo:
//  - a collective is ordered after the work queued on the caller's current
//    stream (the internal stream waits on an event recorded there);
//  - on the internal stream, a kernel runs the gloo collective; the host
//    returns once it is queued. gloo works on the foo tensors in place
//    where it can (dense, and no conversion or overlap in the way:
//    foo_sim's device memory is host memory, as device memory that a
//    transport registers is NCCL's); otherwise the foo data is copied into
//    pinned staging buffers before the kernel and back after it;
//  - the Work ends at an event after the kernel (and the copies back);
//    waiting on it makes the current stream wait (FooWork).
// Which thread runs gloo: the internal stream's kernel, on a foo executor,
// so gloo sees the data exactly when the stream reaches it, and the host
// never waits. That executor is busy for the time of the exchange;
// every other stream of the device keeps running on the other executors.
// Point-to-point operations have their own streams, one for sends and one
// for receives, so that two ranks that both send first, then receive, do
// not wait on each other (given two free executors; batch_isend_irecv
// needs one: see coalescing below).
//
// The class is defined across files by what each part holds: FooBackend.cpp
// (construction, streams, the launch every operation goes through),
// FooCollectives.cpp, FooPointToPoint.cpp and FooCoalescing.cpp.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <foo_sim/foo_runtime.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/CollectiveFingerPrint.h"
#include "distributed/ExchangeOrder.h"
#include "distributed/FooWork.h"
#include "runtime/FooStream.h"

namespace foo::distributed {

// fooccl's options: c10d's (the timeout), copyable from Python, as
// split_group deep-copies the parent group's.
struct FooOptions : c10d::Backend::Options {
  explicit FooOptions(std::chrono::milliseconds timeout) : Options("fooccl", timeout) {}
};

class FooBackend : public c10d::Backend {
 public:
  // `gloo` carries the foo tensors' data (a ProcessGroupGloo over the same
  // store, rank and size). `fingerprints` (another one, under its own store
  // prefix) carries only the comparison of the ranks' tensors before each
  // collective (CollectiveFingerPrint.h) and the headers of point-to-point
  // messages (P2PHeader.h). `host` (a third) takes CPU tensors as they are,
  // at the call: apart from the foo collectives, which reach gloo
  // later from their kernels, so that the two kinds never pair with each
  // other (with NCCL, CPU tensors go to another backend).
  FooBackend(c10::intrusive_ptr<c10d::Backend> gloo, c10::intrusive_ptr<c10d::Backend> fingerprints,
             c10::intrusive_ptr<c10d::Backend> host, int rank, int size, std::chrono::milliseconds timeout);
  ~FooBackend() override;

  const std::string getBackendName() const override { return "fooccl"; }
  // The gloo group underneath.
  c10::intrusive_ptr<c10d::Backend> transport() const { return gloo_; }
  // Waits for the collectives already queued (errors stay with their Work).
  void shutdown() override;

  // Splitting (torch.distributed.split_group, and the device meshes of a
  // group bound to a device, which torch makes by splitting): the new group
  // is a fooccl group of its own over the split's store, made by the
  // creator c10d makes fooccl groups with, which the Python package sets
  // here (it builds the gloo groups underneath).
  using Creator = std::function<c10::intrusive_ptr<c10d::Backend>(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout)>;
  static void set_creator(Creator creator);
  bool supportsSplitting() const override { return true; }
  // c10d numbers a split group's collectives: gloo's numbers, which count
  // the exchanges underneath.
  void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Coalescing, as NCCL's groups: between startCoalescing and
  // endCoalescing, sends and receives are collected, then queued as one
  // kernel that starts them all before it waits for any. batch_isend_irecv
  // uses it, so two ranks that both send first never wait on each other,
  // however few executor threads the device has. Collectives issued in
  // between run as usual.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

 private:
  enum Lane { kCollective = 0, kSend = 1, kRecv = 2, kLanes = 3 };
  // Runs the gloo part on the staged CPU tensors (views of `staged`, in
  // order) and returns gloo's work, which the kernel waits for.
  using GlooCall = std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend&, std::vector<at::Tensor>&)>;

  struct Collective {
    const char* name;
    c10d::OpType type;
    Lane lane = kCollective;
    c10::Device device = c10::Device(c10::DeviceType::PrivateUse1, 0);
    std::vector<at::Tensor> staged;           // pinned buffers gloo works on
    // Or, where nothing needs converting, the foo tensors gloo works on in
    // place (no staging, no copies), and those of them it writes.
    std::vector<at::Tensor> direct;
    std::vector<at::Tensor> written;
    // What gloo works on: the foo tensors themselves, or their staged copies.
    const std::vector<at::Tensor>& exchanged() const { return direct.empty() ? staged : direct; }
    std::function<void()> stage_in;           // foo -> staged, queued on the internal stream
    // Point to point: starts sending or receiving the headers of the
    // messages (P2PHeader.h), called once nothing before the kernel's
    // launch can fail any more.
    std::function<void()> start_p2p_headers;
    GlooCall call;
    std::function<void()> stage_out;          // staged -> foo, queued on the internal stream
    std::vector<at::Tensor> device_tensors;   // foo memory the internal stream touches
    std::vector<at::Tensor> outputs;          // Work::result() and the future's value
    bool host_blocking = false;
    // What every rank must agree on (dtype, element counts), compared
    // across ranks before the data moves; empty for point-to-point.
    std::vector<int64_t> fingerprint;
    bool check_fingerprint = true;
    // An all-to-all's element counts per peer, compared pairwise.
    PairCounts pairs;
    // Run by the kernel on what gloo worked on, once gloo is done:
    // fooccl's part of an integer AVG (`integer_average`).
    std::function<void(std::vector<at::Tensor>&)> after_exchange;
    // Where the kernel leaves its failure for the Work (FooWork.h), and
    // those of the collectives a coalesced group's Work covers.
    FailureSlot failure;
    std::vector<FailureSlot> covered_failures;
  };

  // A send or receive collected while coalescing.
  struct PointToPoint {
    bool is_send;
    at::Tensor tensor;
    int peer;
    int tag;
  };

  // A tensor gloo reads, writes, or both.
  struct Buffer {
    at::Tensor tensor;
    bool read;
    bool written;
  };
  // gloo works on the buffers themselves if `direct`; otherwise on
  // pinned copies, filled before the kernel from those read and copied
  // back after it to those written.
  static void direct_or_staged(Collective& c, const std::vector<Buffer>& buffers, bool direct);
  c10::intrusive_ptr<c10d::Work> launch(Collective c);
  c10::intrusive_ptr<c10d::Work> coalesce(PointToPoint op);
  // launch()'s two halves: orders the internal stream after the caller's
  // and fills the fingerprint; then protects the memory used and records the
  // Work's end.
  FooStream begin(Collective& c);
  c10::intrusive_ptr<c10d::Work> end(Collective& c, const FooStream& internal);
  // One collective per (output, input) pair, in one Work: `each` runs the
  // gloo part of one pair on its staged (input, output).
  using PairCall = std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend&, at::Tensor& in, at::Tensor& out)>;
  // `divisor`: an integer AVG's (integer_average), applied to the outputs.
  c10::intrusive_ptr<c10d::Work> launch_pairs(const char* name, c10d::OpType type, std::vector<at::Tensor> outputs,
                                              std::vector<at::Tensor> inputs, PairCall each, int64_t divisor = 0);
  FooStream stream_for(Lane lane, c10::DeviceIndex device);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  c10::intrusive_ptr<c10d::Backend> fingerprints_;
  c10::intrusive_ptr<c10d::Backend> host_;
  // The collectives' exchanges, in the order the host called them, whatever
  // their device (ExchangeOrder.h). Shared with the kernels, which may
  // outlive the backend.
  std::shared_ptr<ExchangeOrder> exchange_order_ = std::make_shared<ExchangeOrder>();
  // The group's timeout: how long a kernel waits for gloo before it fails
  // the collective (gloo's own timeouts do not cover every mismatch).
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  bool coalescing_ = false;
  std::vector<PointToPoint> coalesced_;
  // The device of the collectives issued while coalescing: the group's
  // Work ends after them too.
  std::optional<c10::Device> coalesced_collectives_;
  std::vector<FailureSlot> coalesced_failures_;
  // Created on first use per device and lane; destroyed with the backend.
  std::vector<std::array<std::optional<FooStream>, kLanes>> streams_;
};

}  // namespace foo::distributed

// Coalescing, as NCCL's groups (FooBackend.h): between startCoalescing and
// endCoalescing sends and receives are collected, then queued as one
// kernel that starts them all before it waits for any.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include "distributed/FooBackend.h"
#include "distributed/FooWork.h"
#include "distributed/GlooWaits.h"
#include "distributed/P2PHeader.h"
#include "distributed/Staging.h"
#include "runtime/FooEvent.h"
#include "runtime/FooFunctions.h"

namespace foo::distributed {

c10::intrusive_ptr<c10d::Work> FooBackend::coalesce(PointToPoint op) {
  TORCH_CHECK_VALUE(coalesced_.empty() || coalesced_.front().tensor.device() == op.tensor.device(),
                    "fooccl: the operations of one batch must be on one foo device");
  c10::Device device = op.tensor.device();
  coalesced_.push_back(std::move(op));
  // The batch's own Work (from endCoalescing) covers the operation; this
  // one has nothing of its own to wait for, as with NCCL inside a group.
  auto work = c10::make_intrusive<FooWork>(rank_, c10d::OpType::COALESCED, "coalesced", device,
                                           std::vector<at::Tensor>{}, false);
  c10::DeviceGuard guard(device);
  work->record_end(getCurrentFooStream(device.index()));
  return work;
}

void FooBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "fooccl: coalescing already started");
  coalescing_ = true;
  coalesced_.clear();
  coalesced_collectives_.reset();
  coalesced_failures_.clear();
}

c10::intrusive_ptr<c10d::Work> FooBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "fooccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  std::vector<PointToPoint> ops = std::move(coalesced_);
  coalesced_.clear();
  std::optional<c10::Device> collectives = std::exchange(coalesced_collectives_, std::nullopt);
  Collective c{"batch_isend_irecv", c10d::OpType::COALESCED, kSend};
  c.check_fingerprint = false;
  c.covered_failures = std::exchange(coalesced_failures_, {});
  if (ops.empty()) {
    // Only collectives in the group: they are already queued on the
    // collective stream of their device, and this Work ends after them.
    c.name = "coalesced collectives";
    c.lane = kCollective;
    c.device = collectives.value_or(c10::Device(c10::DeviceType::PrivateUse1, current_device()));
    return launch(std::move(c));
  }
  c.device = ops.front().tensor.device();
  if (collectives) {
    // As NCCL's group, the batch's Work (the one the group returns) ends
    // after the group's collectives too: its stream waits for them.
    FooEvent done;
    done.record(stream_for(kCollective, collectives->index()));
    done.block(stream_for(kSend, c.device.index()));
  }
  std::vector<at::Tensor> sends, sent, recvs, received;
  std::vector<std::array<int, 3>> plan;  // is_send, peer, tag, in the batch's order
  for (const PointToPoint& op : ops) {
    c.staged.push_back(pinned_like(op.tensor));
    (op.is_send ? sends : recvs).push_back(op.tensor);
    (op.is_send ? sent : received).push_back(c.staged.back());
    plan.push_back({op.is_send ? 1 : 0, op.peer, op.tag});
    c.device_tensors.push_back(op.tensor);
  }
  c.stage_in = [sends, sent]() mutable {
    for (size_t i = 0; i < sends.size(); ++i) sent[i].copy_(sends[i], true);
  };
  auto headers = std::make_shared<std::vector<P2PHeader>>();
  c.start_p2p_headers = [headers, group = fingerprints_, ops] {
    for (const PointToPoint& op : ops) {
      headers->push_back(op.is_send ? P2PHeader::send(*group, op.tensor, op.peer, op.tag)
                                      : P2PHeader::recv(*group, op.peer, op.tag));
    }
  };
  c.call = [plan, headers, timeout = timeout_](c10d::Backend& g,
                                                 std::vector<at::Tensor>& cpu) -> c10::intrusive_ptr<c10d::Work> {
    // Every receive's header first: the peers' hosts sent them, so
    // waiting cannot deadlock, and nothing is in flight yet if one never
    // comes.
    for (size_t i = 0; i < plan.size(); ++i) {
      if (!plan[i][0]) (*headers)[i].wait(timeout);
    }
    std::vector<c10::intrusive_ptr<c10d::Work>> started;
    std::string mismatch;
    for (size_t i = 0; i < plan.size(); ++i) {
      const P2PHeader& a = (*headers)[i];
      std::vector<at::Tensor> one{cpu[i]};
      if (plan[i][0]) {
        started.push_back(a.work());
        started.push_back(g.send(one, plan[i][1], plan[i][2]));
        continue;
      }
      if (!a.matches(cpu[i])) {
        if (mismatch.empty()) mismatch = a.mismatch(cpu[i]);
        one = {a.buffer_for_sent()};  // taken all the same, so that later messages stay matched
      }
      started.push_back(g.recv(one, plan[i][1], plan[i][2]));
    }
    wait_all(started, timeout);
    TORCH_CHECK(mismatch.empty(), mismatch);
    return {};
  };
  c.stage_out = [recvs, received]() mutable {
    for (size_t i = 0; i < recvs.size(); ++i) recvs[i].copy_(received[i], true);
  };
  c.outputs = recvs;
  return launch(std::move(c));
}

}  // namespace foo::distributed

// fooccl's sends and receives (FooBackend.h), each on a stream of its own
// kind, with the message's header sent ahead (P2PHeader.h). Inside a
// coalescing group they are collected instead (FooCoalescing.cpp).
#include <memory>
#include <optional>

#include <ATen/ATen.h>

#include "distributed/Dtypes.h"
#include "distributed/FooBackend.h"
#include "distributed/GlooWaits.h"
#include "distributed/P2PHeader.h"
#include "distributed/Staging.h"
#include "distributed/TensorChecks.h"

namespace foo::distributed {
namespace {

// A receive whose peer's header says something else (P2PHeader.h): takes
// the message into a buffer of the size sent, then fails.
[[noreturn]] void take_and_fail(c10d::Backend& g, const P2PHeader& header, const at::Tensor& receiving,
                                int src, int tag, std::chrono::milliseconds timeout) {
  std::vector<at::Tensor> sink{header.buffer_for_sent()};
  wait_all({g.recv(sink, src, tag)}, timeout);
  TORCH_CHECK(false, header.mismatch(receiving));
}

}  // namespace

c10::intrusive_ptr<c10d::Work> FooBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  if (all_cpu(tensors)) return host_->send(tensors, dst, tag);
  check_one(tensors, "send");
  check_exchangeable(tensors[0], c10d::OpType::SEND);
  if (coalescing_) return coalesce({true, tensors[0], dst, tag});
  at::Tensor t = tensors[0];
  at::Tensor s = pinned_like(t);
  Collective c{"send", c10d::OpType::SEND, kSend};
  c.device = t.device();
  c.staged = {s};
  c.stage_in = [s, t]() mutable { s.copy_(t, true); };
  auto header = std::make_shared<std::optional<P2PHeader>>();
  c.start_p2p_headers = [header, group = fingerprints_, t, dst, tag] {
    *header = P2PHeader::send(*group, t, dst, tag);
  };
  c.call = [dst, tag, header, timeout = timeout_](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    wait_all({(*header)->work(), g.send(cpu, dst, tag)}, timeout);
    return c10::intrusive_ptr<c10d::Work>();
  };
  c.device_tensors = {t};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  if (all_cpu(tensors)) return host_->recv(tensors, src, tag);
  check_one(tensors, "recv");
  check_exchangeable(tensors[0], c10d::OpType::RECV);
  if (coalescing_) return coalesce({false, tensors[0], src, tag});
  at::Tensor t = tensors[0];
  at::Tensor s = pinned_like(t);
  Collective c{"recv", c10d::OpType::RECV, kRecv};
  c.device = t.device();
  c.staged = {s};
  auto header = std::make_shared<std::optional<P2PHeader>>();
  c.start_p2p_headers = [header, group = fingerprints_, src, tag] {
    *header = P2PHeader::recv(*group, src, tag);
  };
  c.call = [src, tag, header, timeout = timeout_](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    const P2PHeader& a = **header;
    a.wait(timeout);
    if (!a.matches(cpu[0])) take_and_fail(g, a, cpu[0], src, tag, timeout);
    return g.recv(cpu, src, tag);
  };
  c.stage_out = [s, t]() mutable { t.copy_(s, true); };
  c.device_tensors = {t};
  c.outputs = {t};
  return launch(std::move(c));
}

}  // namespace foo::distributed

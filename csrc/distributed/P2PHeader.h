// The header of a point-to-point message. Point to point, gloo aborts the
// whole process when a receive's size differs from the send's. So a send
// first sends its peer a header saying what it sends (dtype and element
// count), on the backend's fingerprints group, when send is called; the
// receiving kernel compares that with its own tensor before it receives.
// On a mismatch it still takes the data, into a buffer of the size sent,
// so that the pair's next messages stay matched, and then fails the
// receive with both sides' figures. (NCCL leaves such a
// mismatch undefined; on foo it is an error.)
//
// Headers and data travel in the same order between the same two ranks
// with the same tag, so the k-th header describes the k-th message.
#pragma once

#include <chrono>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace foo::distributed {

class P2PHeader {
 public:
  // The sender's side: starts sending `dst` the header of `sent`.
  static P2PHeader send(c10d::Backend& group, const at::Tensor& sent, int dst, int tag);
  // The receiver's side: starts receiving the header of what `src` will send.
  static P2PHeader recv(c10d::Backend& group, int src, int tag);

  // Waits (at most `timeout`) until the header has gone or come.
  void wait(std::chrono::milliseconds timeout) const;
  // The receiver's side, after wait(): whether `receiving` can take what
  // was sent; if not, a CPU buffer that can, and the error to raise.
  bool matches(const at::Tensor& receiving) const;
  at::Tensor buffer_for_sent() const;
  std::string mismatch(const at::Tensor& receiving) const;

  const c10::intrusive_ptr<c10d::Work>& work() const { return work_; }

 private:
  P2PHeader(int peer, at::Tensor message, c10::intrusive_ptr<c10d::Work> work)
      : peer_(peer), message_(std::move(message)), work_(std::move(work)) {}
  int peer_;
  at::Tensor message_;  // dtype, element count
  c10::intrusive_ptr<c10d::Work> work_;
};

}  // namespace foo::distributed

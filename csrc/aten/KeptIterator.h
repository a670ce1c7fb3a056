// A captured TensorIterator operator that keeps its configured iterator from
// one graph replay to the next.
//
// A captured kernel runs again on every replay with the same foo addresses
// and the same captured host values, so its meta function (checks, output
// shape, strides, dtypes, the iterator's dimension coalescing: most of what
// a small operator costs) produces the same iterator every time. The first
// replay builds it; later replays call only the operator's CPU impl on it,
// as a CUDA graph replays a kernel with its launch parameters already set.
//
// The iterator is kept only when rerunning impl on it is the same as running
// the whole operator again:
//  - it reads and writes the foo memory itself: a foo input that the meta
//    function replaced by a converted copy, or an output it redirected to a
//    temporary, would be a stale snapshot on the next replay (copies of
//    captured host values are fine: those never change);
//  - impl leaves it as it found it (some CPU kernels drop their scalar
//    operand from the iterator, for instance).
// Otherwise every replay runs the whole operator, as without a graph.
#pragma once

#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

namespace foo::aten {

// A foo tensor the operator reads or writes, as the host saw it at the call.
struct FooOperand {
  const void* data;
  at::ScalarType dtype;
};

// Everything about an iterator that impl must leave unchanged to be rerun.
struct IteratorLayout {
  explicit IteratorLayout(const at::TensorIteratorBase& it);
  bool operator==(const IteratorLayout& other) const;

  c10::SmallVector<int64_t, 6> shape;
  c10::SmallVector<int64_t, 24> strides;  // every operand's, one after another
  c10::SmallVector<const void*, 4> data;
  c10::SmallVector<at::ScalarType, 4> dtypes;
};

// Whether each foo operand is one of the iterator's operands as it is.
bool iterates_foo_memory(const at::TensorIteratorBase& it, const std::vector<FooOperand>& foo);

// Thrown from inside a meta function to stop building an iterator that could
// not be kept; the operator then runs the ordinary way.
struct NotKeepable {};

// Native: ATen's CPU structured class of the operator (at::native::structured_mul_out),
// whose meta() configures the iterator and impl() runs the kernel on it.
// Args: the operator's arguments after self, as the kernel holds them.
template <class Native, class... Args>
class KeptIterator final : public Native {
 public:
  KeptIterator(at::Tensor out, at::Tensor self, std::tuple<Args...> args)
      : out_(std::move(out)), self_(std::move(self)), args_(std::move(args)) {}

  // Runs the operator once through a new iterator. Returns it if later runs
  // may reuse it; nullptr if it cannot be kept (the operator has run either
  // way: run_ordinary(out, self, args) runs it without a kept iterator).
  template <class MetaArg, class RunOrdinary>
  static std::unique_ptr<KeptIterator> run_first(at::Tensor out, at::Tensor self, std::tuple<Args...> args,
                                                 const std::vector<FooOperand>& foo, MetaArg meta_arg,
                                                 RunOrdinary run_ordinary) {
    auto op = std::make_unique<KeptIterator>(std::move(out), std::move(self), std::move(args));
    bool configured = false;
    try {
      std::apply([&](const auto&... a) { op->meta(op->self_, meta_arg(a)...); }, op->args_);
      configured = iterates_foo_memory(*op, foo);
    } catch (const NotKeepable&) {
    }
    if (!configured) {
      run_ordinary(op->out_, op->self_, op->args_);
      return nullptr;
    }
    IteratorLayout before(*op);
    op->rerun(meta_arg);
    if (!(IteratorLayout(*op) == before)) return nullptr;
    return op;
  }

  template <class MetaArg>
  void rerun(MetaArg meta_arg) {
    std::apply([&](const auto&... a) { this->impl(self_, meta_arg(a)..., out_); }, args_);
  }

  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) override {
    set_output_raw_strided(i, sizes, strides, options);
  }
  // The foo output was shaped on the host, at the call; an iterator that
  // wants it otherwise (a staging output with other strides) is not kept.
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) override {
    if (i != 0 || sizes != out_.sizes() || options.dtype() != out_.dtype() ||
        (!strides.empty() && strides != out_.strides())) {
      throw NotKeepable{};
    }
    Native::set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }

 private:
  at::Tensor out_;   // CPU alias of the foo output
  at::Tensor self_;  // CPU alias of self (the output itself in place)
  std::tuple<Args...> args_;
};

}  // namespace foo::aten

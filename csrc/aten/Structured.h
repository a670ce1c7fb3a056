// Native foo kernels for ATen's structured operators, from two pieces ATen
// already has: the operator's meta class (argument checks, output sizes,
// strides and dtype, run on the host at call time as on CUDA) and its CPU
// out= kernel (run on the stream, on CPU aliases of the foo memory, writing
// straight into the foo output: no copy).
//
// Structured<"aten::mul", DeviceCheck::NoCheck, Meta, &at::cpu::mul_out>
// provides the functional, in-place and out= kernels;
// generated/StructuredOps.cpp registers them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/TensorIterator.h>
#include <ATen/TensorMeta.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include "aten/CudaDtypes.h"
#include "aten/DeviceCheck.h"
#include "aten/EmptyFoo.h"
#include "aten/KeptIterator.h"
#include "aten/KernelArguments.h"
#include "aten/KernelChecks.h"
#include "aten/Launch.h"
#include "aten/MetaWarnings.h"
#include "aten/TensorInfo.h"

namespace foo::aten {

// An operator name usable as a template argument.
template <size_t N>
struct OpName {
  constexpr OpName(const char (&s)[N]) { std::copy_n(s, N, value); }
  char value[N];
};

// ----------------------------------------------------------- device checks

// Calls fn on each defined tensor in an argument: a tensor, an optional
// one or a list. Index lists (List<optional<Tensor>>) are left to the
// caller: CUDA takes CPU index tensors of any shape there.
template <class T, class F>
void for_each_tensor_in(const T& v, F&& fn) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, at::Tensor>) {
    if (v.defined()) fn(v);
  } else if constexpr (std::is_same_v<D, std::optional<at::Tensor>>) {
    if (v.has_value() && v->defined()) fn(*v);
  } else if constexpr (std::is_same_v<D, at::ITensorListRef>) {
    for (const at::Tensor& t : v) fn(t);
  }
}

template <DeviceCheck Check, class T>
void check_argument(c10::Device device, const T& v, const char* op_name) {
  if constexpr (std::is_same_v<std::decay_t<T>, c10::List<std::optional<at::Tensor>>>) {
    for (const std::optional<at::Tensor>& t : v) {
      if (t.has_value() && !(Check == DeviceCheck::NoCheck && t->defined() && t->is_cpu())) {
        check_device<Check>(device, *t, op_name);
      }
    }
  } else {
    for_each_tensor_in(v, [&](const at::Tensor& t) { check_device<Check>(device, t, op_name); });
  }
}

// TensorIterator's meta functions check that the output does not partly
// overlap an input; the other operators' CPU kernels check it as they run.
// Done here, on the host, it raises at the call as on CUDA.
template <class T>
void check_no_partial_overlap(const at::Tensor& out, const T& v) {
  for_each_tensor_in(v, [&](const at::Tensor& t) { at::assert_no_partial_overlap(out, t); });
}

// Meta functions take some optionals as references (OptionalTensorRef,
// OptionalScalarRef) where the CPU kernels take std::optional; this passes
// either way.
template <class T>
struct MetaArg {
  const std::optional<T>& value;
  operator const std::optional<T>&() const { return value; }
  operator c10::OptionalRef<T>() const { return value ? c10::OptionalRef<T>(*value) : c10::OptionalRef<T>(); }
};

template <>
struct MetaArg<at::Tensor> {
  const std::optional<at::Tensor>& value;
  operator const std::optional<at::Tensor>&() const { return value; }
  operator at::OptionalTensorRef() const { return value ? at::OptionalTensorRef(*value) : at::OptionalTensorRef(); }
};

template <class T>
const T& meta_arg(const T& v) {
  return v;
}
inline MetaArg<at::Tensor> meta_arg(const std::optional<at::Tensor>& v) { return {v}; }
inline MetaArg<at::Scalar> meta_arg(const std::optional<at::Scalar>& v) { return {v}; }

// ---------------------------------------------------- the meta-class hooks

// Allocates the output on foo when the meta function asks for it.
template <class Meta, size_t N = 1>
struct AllocatingMeta final : Meta {
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) override {
    set_output_raw_strided(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) override {
    // No strides means contiguous.
    outputs[i] = strides.empty() ? empty_foo(sizes, options) : empty_strided_foo(sizes, strides, options);
    // TensorIterator records its outputs here; plain meta classes have no body.
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) Meta::set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return outputs[i]; }
  std::array<at::Tensor, N> outputs;
};

// Checks (in place) or resizes (out=) the caller's output.
//
// Holds the output by reference, not by copy: a copy of a tensor that
// Python holds raises its count above one, and torch then takes the GIL to
// keep the Python object alive (TensorImpl::incref_pyobject), and again to
// let it go: two GIL round trips per operator on a host that launches
// thousands of them.
template <class Meta>
struct ProvidedMeta final : Meta {
  ProvidedMeta(const at::Tensor& out, bool inplace) : output(out), inplace(inplace) {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) override {
    set_output_raw_strided(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) override {
    if (inplace) {
      TORCH_CHECK(options.dtype() == output.dtype(), "Bad in-place call: input tensor dtype ", output.dtype(),
                  " and output tensor dtype ", options.dtype(), " should match");
      TORCH_CHECK(sizes == output.sizes(), "Bad in-place call: input tensor size ", output.sizes(),
                  " and output tensor size ", sizes, " should match");
    } else {
      TORCH_CHECK(options.dtype() == output.dtype(), "Expected out tensor to have dtype ", options.dtype(),
                  ", but got ", output.dtype(), " instead");
      // A resized output takes the operator's layout, as ATen's generated
      // resize_out gives it (column-major for linalg's); one of the right
      // sizes keeps its own.
      if (at::native::resize_output(output, sizes)) {
        if (!strides.empty()) {
          at::Tensor t = output;
          t.set_(output.storage(), output.storage_offset(), sizes, strides);  // grows the storage if needed
        } else if (options.memory_format_opt().has_value()) {
          output.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
        }
      }
    }
    // TensorIterator records its outputs here; plain meta classes have no body.
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) Meta::set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return output; }
  const at::Tensor& output;  // the caller's, alive for the call
  const bool inplace;
};

// ------------------------------------------------------------- the kernels

// An argument of a kernel that computes in a wider dtype (CudaDtypes.h).
template <class T>
T widened_argument(const T& v, at::ScalarType from, at::ScalarType to) {
  if constexpr (std::is_same_v<T, at::Tensor>) {
    return widened(v, from, to);
  } else if constexpr (std::is_same_v<T, std::optional<at::Tensor>>) {
    return v.has_value() ? std::optional<at::Tensor>(widened(*v, from, to)) : v;
  } else {
    return v;
  }
}

// What a CPU implementation does to its output's metadata rather than its
// data, made on the foo output at the call: run on a CPU alias, on the
// stream, it would be lost. linalg_lu_solve(left=False) finishes by
// flipping the result's conjugate bit (lazy conjugation), on CPU and CUDA.
template <OpName Name, class... Rest>
void apply_metadata_changes(const at::Tensor& out, const Rest&... rest) {
  if constexpr (std::string_view(Name.value) == "aten::linalg_lu_solve") {
    bool left = std::get<2>(std::forward_as_tuple(rest...));  // (pivots, B, left, adjoint)
    if (!left && out.is_complex()) out._set_conj(!out.is_conj());
  }
}

// ATen's CPU structured class run without its meta function, for a kernel
// whose output foo allocated as the meta function asked on the host
// (Structured::functional): the CPU kernel's own meta would only repeat its
// checks on the same arguments and find the output as it wants it. Only for
// classes whose impl takes everything from its arguments: not TensorIterator
// (built by the meta function) nor precomputed values.
template <class Native>
struct ImplOnly final : Native {
  explicit ImplOnly(const at::Tensor& out) : out(out) {}
  const at::Tensor& maybe_get_output(int64_t) override { return out; }
  const at::Tensor& out;
};

// Native: ATen's CPU structured class (at::native::structured_mul_out) of an
// operator without precomputed values, void for the others. Captured kernels
// of TensorIterator operators keep their iterator between graph replays
// (KeptIterator.h); kernels of the others may run its impl alone (ImplOnly).
template <OpName Name, DeviceCheck Check, class Meta, auto CpuOut, class Native = void, class Sig = decltype(CpuOut)>
struct Structured;

template <class Native>
constexpr bool kKeepsIterator = std::is_base_of_v<at::TensorIteratorBase, Native>;  // false for void
template <class Native>
constexpr bool kRunsImplOnly = !std::is_void_v<Native> && !kKeepsIterator<Native>;

template <OpName Name, DeviceCheck Check, class Meta, auto CpuOut, class Native, class... Rest>
struct Structured<Name, Check, Meta, CpuOut, Native, at::Tensor& (*)(at::Tensor&, const at::Tensor&, Rest...)> {
  static at::Tensor functional(const at::Tensor& self, Rest... rest) {
    AllocatingMeta<Meta> op;
    MetaWarningRecorder warnings;
    op.meta(self, meta_arg(rest)...);
    queue(warnings.take(), op.outputs[0], /*allocated=*/true, self, rest...);
    return std::move(op.outputs[0]);
  }

  static at::Tensor& inplace(at::Tensor& self, Rest... rest) {
    ProvidedMeta<Meta> op(self, /*inplace=*/true);
    MetaWarningRecorder warnings;
    op.meta(self, meta_arg(rest)...);
    queue(warnings.take(), self, /*allocated=*/false, self, rest...);
    return self;
  }

  static at::Tensor& out(const at::Tensor& self, Rest... rest, at::Tensor& result) {
    ProvidedMeta<Meta> op(result, /*inplace=*/false);
    MetaWarningRecorder warnings;
    op.meta(self, meta_arg(rest)...);
    queue(warnings.take(), result, /*allocated=*/false, self, rest...);
    return result;
  }

  // Registers whichever of the three overloads are named (nullptr: none).
  static void register_in(torch::Library& m, const char* functional_name, const char* inplace_name,
                          const char* out_name) {
    if (functional_name) m.impl(functional_name, TORCH_FN(functional));
    if (inplace_name) m.impl(inplace_name, TORCH_FN(inplace));
    if (out_name) m.impl(out_name, TORCH_FN(out));
  }

 private:
  // Queues CpuOut(out, self, rest...) on the current stream of out's device;
  // `meta_warnings`: what the meta function raised on the host; `allocated`:
  // foo allocated `out` as the meta function asked.
  static void queue(std::vector<std::string> meta_warnings, const at::Tensor& out, bool allocated,
                    const at::Tensor& self, Rest... rest) {
    c10::Device device = out.device();
    check_same_device(device, out, Name.value);
    check_device<Check>(device, self, Name.value);
    (check_argument<Check>(device, rest, Name.value), ...);
    if constexpr (std::string_view(Name.value) == "aten::gelu" || std::string_view(Name.value) == "aten::gelu_backward") {
      check_gelu_approximate(std::get<sizeof...(Rest) - 1>(std::forward_as_tuple(rest...)));
    }
    static const TensorChecks kernel_checks = structured_checks(Name.value);
    if (kernel_checks) {
      std::vector<at::Tensor> tensors{self};
      (for_each_tensor_in(rest, [&](const at::Tensor& t) { tensors.push_back(t); }), ...);
      kernel_checks(out, tensors);
    }
    if (out.numel() == 0) return;
    if constexpr (!std::is_base_of_v<at::TensorIteratorBase, Meta>) {
      check_no_partial_overlap(out, self);
      (check_no_partial_overlap(out, rest), ...);
    }
    static const OpDtypeRules dtype_rules(Name.value);
    at::ScalarType dtype = self.scalar_type();
    if (dtype_rules.any()) dtype_rules.check_cuda_has_kernel(dtype);
    bool in_place = out.is_same(self);
    std::optional<at::ScalarType> wide = dtype_rules.wider_compute_dtype(dtype);
    if (dtype_rules.any() && !wide) {
      // The operand CPU cannot take may be another than self (half / complex32).
      (for_each_tensor_in(rest,
                          [&](const at::Tensor& t) {
                            if (wide) return;
                            if (auto w = dtype_rules.wider_compute_dtype(t.scalar_type())) {
                              dtype = t.scalar_type();
                              wide = w;
                            }
                          }),
       ...);
    }
    if constexpr (kKeepsIterator<Native>) {
      if (captures_underway() != 0 && !wide) {
        queue_keeping_iterator(device, out, self, in_place, rest...);
        return;
      }
    }
    launch_op_made(device.index(), Name.value, [&] {
              return [o = TensorInfo(out), s = in_place ? PackedTensor() : PackedTensor(self), in_place, allocated, dtype,
                      wide, packed = std::make_tuple(KernelArgument<Rest>::pack(rest)...),
                      meta_warnings = std::move(meta_warnings)] {
                RepeatedWarningFilter repeated(meta_warnings);
                at::Tensor out_alias = o.cpu();
                at::Tensor self_alias = in_place ? out_alias : s.unpack();
                std::apply(
                    [&](const auto&... p) {
                      auto unpacked = std::make_tuple(KernelArgument<Rest>::unpack(p)...);
                      std::apply(
                          [&](auto&... args) {
                            if (!wide) {
                              if constexpr (kRunsImplOnly<Native>) {
                                if (allocated) {
                                  ImplOnly<Native> op(out_alias);
                                  op.impl(self_alias, meta_arg(args)..., out_alias);
                                  return;
                                }
                              }
                              CpuOut(out_alias, self_alias, args...);
                              // A CPU kernel that restrided its output (resizing it
                              // with a memory format) wrote it in that layout:
                              // rewritten in the foo output's own.
                              if (out_alias.strides() != o.strides()) o.cpu().copy_(out_alias.clone());
                              return;
                            }
                            // A dtype CUDA takes and CPU does not: computed wider, cast back.
                            at::Tensor wide_out = at::empty({0}, out_alias.options().dtype(
                                                                     widened_dtype(out_alias.scalar_type(), dtype, *wide)));
                            CpuOut(wide_out, widened(self_alias, dtype, *wide), widened_argument(args, dtype, *wide)...);
                            out_alias.copy_(wide_out);
                          },
                          unpacked);
                    },
                    packed);
              };
            }, thread_use(out, self, rest...));
    apply_metadata_changes<Name>(out, rest...);
  }

  static KernelThreads thread_use(const at::Tensor& out, const at::Tensor& self, const Rest&... rest) {
    SerialWork work;
    work.add(out);
    work.add(self);
    (for_each_tensor_in(rest, [&](const at::Tensor& t) { work.add(t); }), ...);
    if (!work.serial()) return KernelThreads::Launcher;
    return loops_only() ? KernelThreads::AnyOne : KernelThreads::One;
  }

  // Whether the CPU kernel's only parallelism is ATen's parallel loops
  // (KernelThreads::AnyOne): TensorIterator operators, and the reductions
  // whose kernels are TensorIterator reductions (parallel_reduce and
  // foreach_reduced_elt take one range below GRAIN_SIZE). Not the scans
  // (cumsum's loop parallelizes from one row) nor BLAS and LAPACK kernels.
  static constexpr bool loops_only() {
    if (std::is_base_of_v<at::TensorIteratorBase, Meta>) return true;
    constexpr std::string_view name(Name.value);
    constexpr std::string_view op = name.substr(0, name.find('.'));
    for (std::string_view reduction : {"aten::sum", "aten::mean", "aten::prod", "aten::amax", "aten::amin",
                                       "aten::aminmax", "aten::argmax", "aten::argmin", "aten::any", "aten::all"}) {
      if (op == reduction) return true;
    }
    return false;
  }

  // A kernel captured into a graph: the first replay configures a
  // TensorIterator and later ones only rerun the CPU impl on it.
  static void queue_keeping_iterator(c10::Device device, const at::Tensor& out, const at::Tensor& self, bool in_place,
                                     Rest... rest) {
    std::vector<FooOperand> foo;
    auto note = [&](const at::Tensor& t) {
      if (t.device().type() == c10::DeviceType::PrivateUse1) foo.push_back({t.const_data_ptr(), t.scalar_type()});
    };
    note(out);
    note(self);
    (for_each_tensor_in(rest, note), ...);
    using Kept = KeptIterator<Native, std::decay_t<decltype(KernelArgument<Rest>::unpack(
                                          std::declval<const typename KernelArgument<Rest>::Packed&>()))>...>;
    // Replays of graphs instantiated from one capture may overlap: the
    // first one configures the iterator under the lock, and publishes it.
    struct State {
      std::atomic<Kept*> ready{nullptr};
      std::mutex mutex;
      std::unique_ptr<Kept> iterator;
      bool ordinary = false;  // not keepable: every replay runs the whole operator
    };
    struct Kernel {
      // First: what a replay after the first reads (with OpKernel's header).
      std::unique_ptr<State> state;
      TensorInfo o;
      PackedTensor s;
      bool in_place;
      std::vector<FooOperand> foo;
      std::tuple<typename KernelArgument<Rest>::Packed...> packed;

      void operator()() {
        auto as_meta_arg = [](const auto& v) -> decltype(auto) { return meta_arg(v); };
        if (Kept* iterator = state->ready.load(std::memory_order_acquire)) {
          iterator->rerun(as_meta_arg);
          return;
        }
        std::lock_guard<std::mutex> lock(state->mutex);
        if (state->iterator) {
          state->iterator->rerun(as_meta_arg);
          return;
        }
        at::Tensor out_alias = o.cpu();
        at::Tensor self_alias = in_place ? out_alias : s.unpack();
        auto unpacked = std::apply(
            [](const auto&... p) { return std::make_tuple(KernelArgument<Rest>::unpack(p)...); }, packed);
        auto run_ordinary = [](at::Tensor& out_a, const at::Tensor& self_a, auto& args) {
          std::apply([&](auto&... a) { CpuOut(out_a, self_a, a...); }, args);
        };
        if (state->ordinary) {
          run_ordinary(out_alias, self_alias, unpacked);
          return;
        }
        state->iterator =
            Kept::run_first(std::move(out_alias), std::move(self_alias), std::move(unpacked), foo, as_meta_arg, run_ordinary);
        state->ordinary = !state->iterator;
        state->ready.store(state->iterator.get(), std::memory_order_release);
      }

      // A replay's hint (FooLaunch.h): the state, then the kept iterator,
      // each a stage after the pointer to it was fetched.
      void prefetch(int stage) const {
        if (stage == 0) {
          prefetch_bytes(this, sizeof(state));
        } else if (stage == 1) {
          prefetch_bytes(state.get(), sizeof(State));
        } else if (Kept* iterator = state->ready.load(std::memory_order_acquire)) {
          prefetch_bytes(iterator, sizeof(Kept));
        }
      }
    };
    launch_op(device.index(), Name.value,
              Kernel{std::make_unique<State>(), TensorInfo(out), PackedTensor(self), in_place, std::move(foo),
                     std::make_tuple(KernelArgument<Rest>::pack(rest)...)});
  }
};

}  // namespace foo::aten

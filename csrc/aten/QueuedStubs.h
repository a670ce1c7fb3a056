// DispatchStub entries for foo that queue the CPU kernel on the stream.
//
// ATen's host code that CPU and CUDA share (`dispatch: CPU, CUDA: fn`, the
// structured TORCH_IMPL_FUNCs) checks its arguments, raises its warnings and
// sizes its outputs, then calls a DispatchStub with the device type of its
// tensors. Registered for PrivateUse1, that host code runs on foo at the
// call, as on CUDA, and reaches the stub with foo tensors; the entries here
// carry the stub's arguments into a kernel (KernelArguments.h: foo tensors by
// address, CPU tensors and values by copy, an iterator with its operands)
// that runs the stub's CPU kernel on the stream, over CPU aliases.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/TensorIterator.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/SmallVector.h>

#include "aten/KernelArguments.h"
#include "aten/Launch.h"
#include "aten_runtime/FooGenerator.h"

namespace foo::aten {

// A TensorIterator that host code configured over foo tensors, as a kernel
// carries it: the iterator's layout (shape, strides, data addresses) by
// value, its operands by address.
//
// Not covered: an iterator over foo tensors skips what TensorIterator does
// only for CPU tensors (inputs converted to the common dtype, outputs
// computed in it and cast back), as CUDA's loops convert as they load; CPU's
// loops do not, and whether the operator asked for the conversion is not
// recorded in the built iterator (take's index stays Long where add's int
// operand becomes float). Operators whose operands may differ in dtype stay
// off this path (gen_structured_ops.py HOST_EXCLUDED_PREFIXES).
class PackedIterator {
 public:
  explicit PackedIterator(const at::TensorIteratorBase& iter);

  // In the kernel: the iterator over CPU aliases, ready for the CPU kernel.
  class Live {
   public:
    explicit Live(const PackedIterator& packed);
    at::TensorIterator& get() { return iter_; }
    void finish() {}

   private:
    at::TensorIterator iter_;
  };

 private:
  struct Operand {
    std::optional<PackedTensor> tensor;
    std::optional<PackedTensor> original;  // an output redirected by host code to a temporary
  };
  at::TensorIterator iter_;  // operands' tensors dropped: the host's are gone when the kernel runs
  c10::SmallVector<Operand, 4> operands_;
};

// The random stream a kernel draws from: the next one of `gen` (the current
// device's default generator when none is given), a foo generator.
PhiloxFooState philox_state_of(const std::optional<at::Generator>& gen);

// The operator whose host code is running on this thread, for the kernels
// its stubs queue (nullptr outside one).
const char* current_host_op();
class HostOpScope {
 public:
  explicit HostOpScope(const char* op_name);
  ~HostOpScope();
  HostOpScope(const HostOpScope&) = delete;
  HostOpScope& operator=(const HostOpScope&) = delete;

 private:
  const char* previous_;
};

// How a stub's argument of type T travels into the kernel; `packable` is
// false for a type no rule covers (the stub then keeps no foo entry).
template <class T>
struct StubArg {
  static constexpr bool packable = false;
};

template <class T>
concept PlainValue = (std::is_arithmetic_v<std::decay_t<T>> || std::is_enum_v<std::decay_t<T>> ||
                      std::is_same_v<std::decay_t<T>, c10::Scalar> ||
                      std::is_same_v<std::decay_t<T>, std::optional<c10::Scalar>> ||
                      std::is_same_v<std::decay_t<T>, std::optional<int64_t>> ||
                      std::is_same_v<std::decay_t<T>, std::optional<double>> ||
                      std::is_same_v<std::decay_t<T>, std::optional<at::ScalarType>>) &&
                     (!std::is_reference_v<T> || std::is_const_v<std::remove_reference_t<T>>);

template <PlainValue T>
struct StubArg<T> {
  static constexpr bool packable = true;
  using Packed = std::decay_t<T>;
  static Packed pack(const Packed& v) { return v; }
  static Packed unpack(const Packed& v) { return v; }
};

template <class T>
concept TensorRef = std::is_same_v<T, const at::Tensor&> || std::is_same_v<T, const at::TensorBase&> ||
                    std::is_same_v<T, at::Tensor&> || std::is_same_v<T, at::TensorBase&> ||
                    std::is_same_v<T, const at::Tensor> || std::is_same_v<T, at::Tensor>;

template <TensorRef T>
struct StubArg<T> {
  static constexpr bool packable = true;
  using Packed = PackedTensor;
  static Packed pack(const at::TensorBase& t) { return t.defined() ? PackedTensor(at::Tensor(t)) : PackedTensor(); }
  static at::Tensor unpack(const Packed& s) { return s.unpack(); }
};

template <class T>
concept IteratorRef = std::is_same_v<T, at::TensorIteratorBase&> || std::is_same_v<T, at::TensorIterator&> ||
                      std::is_same_v<T, const at::TensorIteratorBase&>;

template <IteratorRef T>
struct StubArg<T> {
  static constexpr bool packable = true;
  using Packed = PackedIterator;
  static Packed pack(const at::TensorIteratorBase& iter) { return PackedIterator(iter); }
  static PackedIterator::Live unpack(const Packed& s) { return PackedIterator::Live(s); }
};

template <>
struct StubArg<at::IntArrayRef> {
  static constexpr bool packable = true;
  using Packed = std::vector<int64_t>;
  static Packed pack(at::IntArrayRef v) { return v.vec(); }
  static const Packed& unpack(const Packed& v) { return v; }
};

template <class T>
concept StringView = std::is_same_v<std::decay_t<T>, c10::string_view> || std::is_same_v<std::decay_t<T>, std::string>;

template <StringView T>
struct StubArg<T> {
  static constexpr bool packable = true;
  using Packed = std::string;
  static Packed pack(std::string_view v) { return std::string(v); }
  static const Packed& unpack(const Packed& v) { return v; }
};

template <class T>
concept GeneratorArg = std::is_same_v<std::decay_t<T>, std::optional<at::Generator>> ||
                       std::is_same_v<std::decay_t<T>, at::Generator>;

template <GeneratorArg T>
struct StubArg<T> {
  static constexpr bool packable = true;
  using Packed = PhiloxFooState;
  static Packed pack(const std::optional<at::Generator>& gen) { return philox_state_of(gen); }
  static at::Generator unpack(const Packed& rng) { return rng.generator(); }
};

namespace detail {

// What the kernel passes for a given argument: the iterator inside a Live.
template <class G>
decltype(auto) passed(G& given) {
  if constexpr (std::is_same_v<G, PackedIterator::Live>) {
    return (given.get());
  } else {
    return (given);
  }
}

template <class G>
void finish(G& given) {
  if constexpr (std::is_same_v<G, PackedIterator::Live>) given.finish();
}

// The foo device of a stub call: its first foo tensor's (or iterator
// operand's), else the current device.
c10::DeviceIndex device_of_call(std::initializer_list<const void*> iterators,
                                std::initializer_list<const at::TensorBase*> tensors);

template <class T>
const void* iterator_pointer(const T& v) {
  if constexpr (std::is_base_of_v<at::TensorIteratorBase, std::decay_t<T>>) {
    return static_cast<const at::TensorIteratorBase*>(&v);
  } else {
    return nullptr;
  }
}
template <class T>
const at::TensorBase* tensor_pointer(const T& v) {
  if constexpr (std::is_base_of_v<at::TensorBase, std::decay_t<T>>) {
    return &v;
  } else {
    return nullptr;
  }
}

// Counts a stub argument's elements: an iterator's operands, or a tensor.
template <class T>
void add_work(SerialWork& work, const T& v) {
  if constexpr (std::is_base_of_v<at::TensorIteratorBase, std::decay_t<T>>) {
    for (int i = 0; i < v.ntensors(); ++i) work.add(v.tensor_base(i));
  } else if constexpr (std::is_base_of_v<at::TensorBase, std::decay_t<T>>) {
    work.add(v);
  }
}

}  // namespace detail

// The foo entry of `Stub`, whose kernels take Args.
template <auto& Stub, class Fn>
struct QueuedStub;

template <auto& Stub, class... Args>
struct QueuedStub<Stub, void (*)(Args...)> {
  static constexpr bool packable = (StubArg<Args>::packable && ...);

  static void run(Args... args) {
    c10::DeviceIndex device = detail::device_of_call({detail::iterator_pointer(args)...}, {detail::tensor_pointer(args)...});
    const char* name = current_host_op();
    SerialWork work;
    (detail::add_work(work, args), ...);
    launch_op(device, name ? name : "foo::queued_stub",
              [packed = std::make_tuple(StubArg<Args>::pack(args)...)] {
                std::apply(
                    [](const auto&... stored) {
                      auto given = std::make_tuple(StubArg<Args>::unpack(stored)...);
                      std::apply([](auto&... g) { Stub(c10::DeviceType::CPU, detail::passed(g)...); }, given);
                      std::apply([](auto&... g) { (detail::finish(g), ...); }, given);
                    },
                    packed);
              },
              work.serial());
  }
};

// How many of ATen's stubs have a queueing foo entry (QueuedStubList.cpp).
int queued_stub_count();

// Makes `Stub`'s foo entry queue its CPU kernel; false (and nothing
// registered) when an argument type has no carrying rule or the stub returns
// a value.
template <auto& Stub>
bool register_queued_stub() {
  using FnPtr = typename std::remove_reference_t<decltype(Stub)>::FnPtr;
  if constexpr (requires { QueuedStub<Stub, FnPtr>::packable; }) {
    if constexpr (QueuedStub<Stub, FnPtr>::packable) {
      Stub.set_privateuse1_dispatch_ptr(&QueuedStub<Stub, FnPtr>::run);
      return true;
    }
  }
  return false;
}

}  // namespace foo::aten

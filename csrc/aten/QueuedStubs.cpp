#include "aten/QueuedStubs.h"

#include <mutex>

#include "runtime/FooFunctions.h"

namespace foo::aten {
namespace {

thread_local const char* t_host_op = nullptr;

}  // namespace

PackedIterator::PackedIterator(const at::TensorIteratorBase& iter) : iter_(iter) {
  for (int i = 0; i < iter_.ntensors(); ++i) {
    at::OperandInfo& op = iter_.operand(i);
    Operand packed;
    if (op.original_tensor_base().defined()) {
      packed.original = PackedTensor(op.original_tensor());
      op.restore_original_tensor();
    }
    if (op.tensor_base().defined()) packed.tensor = PackedTensor(op.tensor());
    op.tensor(c10::MaybeOwned<at::TensorBase>::owned(std::in_place));
    operands_.push_back(std::move(packed));
  }
}

PackedIterator::Live::Live(const PackedIterator& packed) : iter_(packed.iter_) {
  for (int i = 0; i < iter_.ntensors(); ++i) {
    const Operand& o = packed.operands_[i];
    at::OperandInfo& op = iter_.operand(i);
    if (!o.tensor) continue;
    at::Tensor t = o.tensor->unpack();
    // A CPU scalar travels by value: the iterator reads the kernel's copy.
    if (op.device && op.device->is_cpu()) op.data = t.data_ptr();
    if (o.original) {
      op.tensor(c10::MaybeOwned<at::TensorBase>::owned(o.original->unpack()));
      op.exchange_tensor(c10::MaybeOwned<at::TensorBase>::owned(std::move(t)));
    } else {
      op.tensor(c10::MaybeOwned<at::TensorBase>::owned(std::move(t)));
    }
  }
}

PhiloxFooState philox_state_of(const std::optional<at::Generator>& given) {
  at::Generator gen = given.has_value() && given->defined() ? *given : default_generator(current_device());
  TORCH_CHECK(gen.device().type() == c10::DeviceType::PrivateUse1, "Expected a foo generator, but got a generator of ",
              gen.device());
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<FooGeneratorImpl>()->philox_foo_state();
}

const char* current_host_op() { return t_host_op; }

HostOpScope::HostOpScope(const char* op_name) : previous_(t_host_op) { t_host_op = op_name; }
HostOpScope::~HostOpScope() { t_host_op = previous_; }

c10::DeviceIndex detail::device_of_call(std::initializer_list<const void*> iterators,
                                        std::initializer_list<const at::TensorBase*> tensors) {
  for (const void* p : iterators) {
    if (!p) continue;
    const auto& iter = *static_cast<const at::TensorIteratorBase*>(p);
    for (int i = 0; i < iter.ntensors(); ++i) {
      const at::TensorBase& t = iter.operand(i).tensor_base();
      if (t.defined() && t.device().is_privateuseone()) return t.device().index();
    }
  }
  for (const at::TensorBase* t : tensors) {
    if (t && t->defined() && t->device().is_privateuseone()) return t->device().index();
  }
  return current_device();
}

}  // namespace foo::aten

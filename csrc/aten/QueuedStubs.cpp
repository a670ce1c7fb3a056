#include "aten/QueuedStubs.h"

#include <mutex>

#include <ATen/ops/empty_strided.h>

#include "runtime/FooFunctions.h"

namespace foo::aten {
namespace {

thread_local const char* t_host_op = nullptr;

// The dtype TensorIterator would have converted this iterator's operands to
// on CPU: its common dtype when operands differ from it, else nullopt.
std::optional<at::ScalarType> conversion_dtype(const at::TensorIteratorBase& iter) {
  std::optional<at::ScalarType> first;
  bool mixed = false;
  for (int i = 0; i < iter.ntensors(); ++i) {
    if (!iter.operand(i).tensor_base().defined()) continue;
    at::ScalarType d = iter.operand(i).current_dtype;
    if (!first) first = d;
    mixed = mixed || d != *first;
  }
  if (!mixed) return std::nullopt;
  try {
    return iter.common_dtype();
  } catch (const c10::Error&) {
    return std::nullopt;  // no common dtype: the kernel takes its operands' own
  }
}

// Replaces operand `op`'s tensor with a copy in `dtype` of the same element
// strides, so the iterator's byte strides scale with the element size.
void convert_operand(at::OperandInfo& op, at::ScalarType dtype, bool copy_in) {
  const at::Tensor& t = op.tensor();
  at::Tensor converted = at::empty_strided(t.sizes(), t.strides(), t.options().dtype(dtype));
  if (copy_in) converted.copy_(t);
  int64_t from = t.element_size(), to = converted.element_size();
  auto offset = (static_cast<char*>(op.data) - static_cast<char*>(t.data_ptr())) / from;
  op.data = static_cast<char*>(converted.data_ptr()) + offset * to;
  for (auto& s : op.stride_bytes) s = s / from * to;
  op.exchange_tensor(c10::MaybeOwned<at::TensorBase>::owned(std::move(converted)));
  op.current_dtype = dtype;
  op.target_dtype = dtype;
}

}  // namespace

CarriedIterator::CarriedIterator(const at::TensorIteratorBase& iter)
    : iter_(iter), common_dtype_(conversion_dtype(iter)) {
  for (int i = 0; i < iter_.ntensors(); ++i) {
    at::OperandInfo& op = iter_.operand(i);
    Operand carried;
    if (op.original_tensor_base().defined()) {
      carried.original = CarriedTensor(op.original_tensor());
      op.restore_original_tensor();
    }
    if (op.tensor_base().defined()) carried.tensor = CarriedTensor(op.tensor());
    op.tensor(c10::MaybeOwned<at::TensorBase>::owned(std::in_place));
    operands_.push_back(std::move(carried));
  }
}

CarriedIterator::Live::Live(const CarriedIterator& carried) : iter_(carried.iter_) {
  for (int i = 0; i < iter_.ntensors(); ++i) {
    const Operand& o = carried.operands_[i];
    at::OperandInfo& op = iter_.operand(i);
    if (!o.tensor) continue;
    at::Tensor t = o.tensor->get();
    // A CPU scalar travels by value: the iterator reads the kernel's copy.
    if (op.device && op.device->is_cpu()) op.data = t.data_ptr();
    if (o.original) {
      op.tensor(c10::MaybeOwned<at::TensorBase>::owned(o.original->get()));
      op.exchange_tensor(c10::MaybeOwned<at::TensorBase>::owned(std::move(t)));
    } else {
      op.tensor(c10::MaybeOwned<at::TensorBase>::owned(std::move(t)));
    }
  }
  if (!carried.common_dtype_) return;
  for (int i = 0; i < iter_.ntensors(); ++i) {
    at::OperandInfo& op = iter_.operand(i);
    if (!op.tensor_base().defined() || op.current_dtype == *carried.common_dtype_ ||
        op.original_tensor_base().defined()) {
      continue;
    }
    convert_operand(op, *carried.common_dtype_, /*copy_in=*/!op.is_output || op.is_read_write);
    cast_outputs_ = cast_outputs_ || op.is_output;
  }
}

void CarriedIterator::Live::finish() {
  if (cast_outputs_) iter_.cast_outputs();
}

KernelRng next_kernel_rng(const std::optional<at::Generator>& given) {
  at::Generator gen = given.has_value() && given->defined() ? *given : default_generator(current_device());
  TORCH_CHECK(gen.device().type() == c10::DeviceType::PrivateUse1, "Expected a foo generator, but got a generator of ",
              gen.device());
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<FooGeneratorImpl>()->next_kernel_rng();
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

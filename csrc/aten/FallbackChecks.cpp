#include "aten/FallbackChecks.h"

#include <optional>

#include <ATen/MemoryOverlap.h>
#include <ATen/core/jit_type.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "aten/DeviceCheck.h"
#include "aten/IValueTensors.h"
#include "runtime/FooFunctions.h"

namespace foo::aten::fallback {
namespace {

using Stack = torch::jit::Stack;
constexpr c10::DeviceType kFoo = c10::DeviceType::PrivateUse1;

// Operators that, like CUDA's, take CPU tensors of any size alongside
// device tensors: indexing's index tensors, and bernoulli_'s probabilities
// (CUDA's kernel copies them to the device).
bool accepts_cpu_tensors(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name == "aten::index" || name == "aten::index_put_" || name == "aten::index_put" ||
         name == "aten::_index_put_impl_" || name == "aten::bernoulli_";
}

// The value of fill_, masked_fill_ and index_fill_ with a tensor value may
// overlap what they write: their CPU kernels (and CUDA's) take it as a
// number before they write, so it may be an element of the tensor they fill
// (t.fill_(t[1])).
bool reads_its_value_first(const std::string& name) {
  return name == "aten::fill_.Tensor" || name == "aten::masked_fill_.Tensor" ||
         name == "aten::index_fill_.int_Tensor" || name == "aten::index_fill_.Dimname_Tensor";
}

// ScalarType arguments are ints in the boxed stack; only the schema's real
// type tells them from other ints.
bool is_scalar_type(const c10::TypePtr& type) {
  if (auto optional = type->cast<c10::OptionalType>()) return is_scalar_type(optional->getElementType());
  return type->kind() == c10::TypeKind::ScalarTypeType;
}

void refuse_quantized(const std::string& name, c10::ScalarType type, const char* what) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isQIntType(type), "Could not run '", name, "' with arguments from the 'Quantized",
                              c10::get_privateuse1_backend(), "' backend: foo has no quantized kernels (", what,
                              " is ", type, ")");
}

}  // namespace

void check_written_arguments_on_device(const c10::FunctionSchema& schema, const Stack& args, c10::Device device) {
  for (size_t i = 0; i < args.size() && i < schema.arguments().size(); ++i) {
    const auto* info = schema.arguments()[i].alias_info();
    if (!info || !info->isWrite()) continue;
    for_each_tensor(args[i], [&](const at::Tensor& t) { check_same_device(device, t, schema.name().c_str()); });
  }
}

c10::Device common_device(const c10::OperatorHandle& op, const std::string& name, const Stack& args) {
  std::optional<c10::Device> device;
  std::optional<at::Tensor> cpu_tensor;
  for (const c10::IValue& v : args) {
    if (v.isDevice() && v.toDevice().type() == kFoo && !device) device = v.toDevice();
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      if (t.device().type() == kFoo) {
        TORCH_CHECK(!device || *device == t.device() || !device->has_index(),
                    "Expected all tensors to be on the same device, but found at least two devices, ", *device,
                    " and ", t.device(), "! (when checking the arguments of ", op.schema().name(), ")");
        device = t.device();
      } else if (!cpu_tensor || t.dim() > 0) {
        cpu_tensor = t;
      }
    });
  }
  if (!device) {
    // Only a foo generator brought the call here (torch.rand(3, generator=
    // a foo generator)): CPU's kernels refuse it with this message.
    for (const c10::IValue& v : args) {
      TORCH_CHECK(!(v.isGenerator() && v.toGenerator().device().type() == kFoo),
                  "Expected a 'cpu' device type for generator but found '", v.toGenerator().device().type(), "'");
    }
    TORCH_CHECK(false, op.schema().name(), ": no foo tensor among the arguments of a foo call");
  }
  if (!device->has_index()) device = c10::Device(kFoo, current_device());
  if (cpu_tensor) {
    const char* op_name = op.schema().name().c_str();
    if (has_exact_device_check(name)) {
      check_same_device(*device, *cpu_tensor, op_name);
    } else if (!accepts_cpu_tensors(op)) {
      check_on_device_or_cpu_scalar(*device, *cpu_tensor, op_name);
    }
  }
  return *device;
}

void check_written_arguments_do_not_partly_overlap(const c10::FunctionSchema& schema, const Stack& args,
                                                   const std::string& name) {
  const bool value_first = reads_its_value_first(name);
  for (size_t w = 0; w < args.size(); ++w) {
    const auto* info = schema.arguments()[w].alias_info();
    if (!info || !info->isWrite()) continue;
    for_each_tensor(args[w], [&](const at::Tensor& written) {
      if (!written.defined() || !written.device().is_privateuseone()) return;
      for (size_t r = 0; r < args.size(); ++r) {
        if (r == w) continue;
        for_each_tensor(args[r], [&](const at::Tensor& read) {
          if (!read.defined() || (value_first && read.dim() == 0 && schema.arguments()[r].name() == "value")) return;
          if (read.device() == written.device()) at::assert_no_partial_overlap(written, read);
        });
      }
    });
  }
}

void check_no_quantized_arguments(const c10::FunctionSchema& schema, const Stack& args, const std::string& name) {
  for (size_t i = 0; i < args.size() && i < schema.arguments().size(); ++i) {
    for_each_tensor(args[i], [&](const at::Tensor& t) {
      if (t.defined()) refuse_quantized(name, t.scalar_type(), "an argument");
    });
    if (args[i].isInt() && is_scalar_type(schema.arguments()[i].real_type())) {
      refuse_quantized(name, static_cast<c10::ScalarType>(args[i].toInt()), "the dtype asked for");
    }
  }
}

void check_no_quantized_results(const std::string& name, const Stack& results) {
  for (const c10::IValue& r : results) {
    for_each_tensor(r, [&](const at::Tensor& t) {
      if (t.defined()) refuse_quantized(name, t.scalar_type(), "the result");
    });
  }
}

}  // namespace foo::aten::fallback

#include "aten/FallbackRng.h"

#include <mutex>

#include <c10/util/Exception.h>

namespace foo::aten::fallback {

bool is_generator_argument(const c10::Argument& a) {
  const auto& type = a.type();
  if (type->kind() == c10::TypeKind::GeneratorType) return true;
  auto optional = type->cast<c10::OptionalType>();
  return optional && optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
}

PhiloxFooState philox_state_for(const c10::IValue& given, c10::Device device) {
  at::Generator gen = given.isNone() ? default_generator(device.index()) : given.toGenerator();
  TORCH_CHECK(gen.device() == device, "Expected a '", device, "' generator for an operator on ", device,
              ", but got a generator of ", gen.device());
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<FooGeneratorImpl>()->philox_foo_state();
}

}  // namespace foo::aten::fallback

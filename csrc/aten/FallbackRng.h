// Generator arguments of fallback calls. Each kernel draws from its own
// random stream of the call's foo generator (FooGenerator.h): the CPU
// kernel gets a CPU generator for it where the operator takes a generator.
#pragma once

#include <utility>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include "aten_runtime/FooGenerator.h"

namespace foo::aten::fallback {

// Whether the argument is a Generator or an optional one.
bool is_generator_argument(const c10::Argument& a);

// The random stream a kernel draws from: the next one of the call's foo
// generator (the device's default one when none was given).
PhiloxFooState philox_state_for(const c10::IValue& given, c10::Device device);

// Generator arguments of a queued call, by argument index: the kernel puts
// each one's CPU generator in place when it runs (a captured kernel runs
// once per replay, each time with fresh numbers).
using PhiloxStates = std::vector<std::pair<size_t, PhiloxFooState>>;

}  // namespace foo::aten::fallback

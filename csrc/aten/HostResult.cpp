#include "aten/HostResult.h"

#include <cstring>

#include <foo_sim/foo_race.h>

#include "aten/EmptyFoo.h"
#include "runtime/FooStream.h"

namespace foo::aten {

at::Tensor foo_tensor_from_host(const at::Tensor& cpu, c10::Device device) {
  if (cpu.layout() != c10::kStrided) return cpu.to(device);  // a sparse result: its indices and values
  at::Tensor out = empty_strided_foo(cpu.sizes(), cpu.strides(), cpu.options().device(device));
  if (out.numel() == 0) return out;
  // The race detector sees a copy; a direct write would be a host access
  // it has to be told of.
  bool direct = cpu.is_non_overlapping_and_dense() && !cpu.is_conj() && !cpu.is_neg() &&
                fooRaceGetMode() == fooRaceModeOff && getCurrentFooStream(device.index()).query();
  if (direct) {
    std::memcpy(out.data_ptr(), cpu.data_ptr(), static_cast<size_t>(cpu.numel()) * cpu.element_size());
  } else {
    out.copy_(cpu);
  }
  return out;
}

}  // namespace foo::aten

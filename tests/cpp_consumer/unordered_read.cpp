// A stream race in a C++ program: a side stream writes a tensor and the
// default stream reads it with nothing ordering the two. Under
// FOO_SIM_RACE_CHECK=raise the read must throw; prints "race: <report>", or
// "no race" and exits with 1.
#include <cstdio>
#include <string>

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

int main() {
  const c10::Device device("foo:0");
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::PrivateUse1);
  const c10::Stream side = guard.getStreamFromGlobalPool(device);
  at::Tensor x = at::zeros({1024}, at::TensorOptions().device(device));
  guard.synchronizeStream(guard.getDefaultStream(device));  // x is ready for every stream
  {
    c10::StreamGuard on_side(side);
    x.fill_(1);
  }
  try {
    at::Tensor y = x.mul(2);  // on the default stream, after no wait
    guard.synchronizeDevice(device.index());
  } catch (const c10::Error& e) {
    std::string report = e.what_without_backtrace();
    std::printf("race: %s\n", report.substr(0, report.find('\n')).c_str());
    return 0;
  }
  std::printf("no race\n");
  return 1;
}

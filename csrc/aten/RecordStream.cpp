// Tensor.record_stream: tells the caching allocator another stream uses the memory.
#include <torch/library.h>

#include "runtime/FooCachingAllocator.h"

namespace foo::aten {
namespace {

void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream of a foo tensor needs a foo stream, got a stream of device ", stream.device());
  getFooDeviceAllocator()->recordStream(self.storage().data_ptr(), stream);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", TORCH_FN(record_stream)); }

}  // namespace
}  // namespace foo::aten
